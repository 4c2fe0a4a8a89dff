/// One request an upload protocol wants sent.
public struct UploadExchange: Sendable, Equatable {
    public var method: String
    /// Nil: the URL the user gave (a creation or probe).
    public var url: String?
    public var headers: HeaderFields
    public var body: BodyRange?
    public var checksum: BodyChecksum?
    /// A small body built by the machine rather than read from the source (S3's CompleteMultipartUpload XML).
    public var document: [UInt8]?
    /// False: the user's `-H` headers stay off this request (S3 puts them only on the one that creates the object).
    public var userHeaders = true
}
