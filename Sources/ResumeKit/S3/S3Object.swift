/// An object a listing returned.
public struct S3Object: Sendable, Equatable {
    public var key: String
    public var size: Int64
    public var etag: String
    /// `LastModified` as ListObjectsV2 gives it (`2026-11-27T10:00:00.000Z`).
    public var lastModified: String?

    public init(key: String, size: Int64, etag: String, lastModified: String? = nil) {
        self.key = key
        self.size = size
        self.etag = etag
        self.lastModified = lastModified
    }
}
