/// A digest of a request body that the protocol wants sent in a header, e.g. tus's
/// `Upload-Checksum: sha256 <base64>` (S3 parts would use `Content-MD5: <base64>`).
public struct BodyChecksum: Sendable, Equatable {
    public var header: String
    public var algorithm: DigestAlgorithm
    /// Written before the base64 digest in the header's value.
    public var prefix = ""
}
