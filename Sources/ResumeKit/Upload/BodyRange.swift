/// A range of the upload's source that a request carries as its body.
public struct BodyRange: Sendable, Equatable {
    public var offset: Int64
    public var length: Int64
}
