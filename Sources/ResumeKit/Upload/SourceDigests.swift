/// Digests of one range of the source that a plan needs instead of a request.
public struct SourceDigests: Sendable, Equatable {
    public var range: BodyRange
    public var algorithms: [DigestAlgorithm]
}
