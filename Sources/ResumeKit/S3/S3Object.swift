/// An object a listing returned.
public struct S3Object: Sendable, Equatable {
    public var key: String
    public var size: Int64
    public var etag: String

    public init(key: String, size: Int64, etag: String) {
        self.key = key
        self.size = size
        self.etag = etag
    }
}
