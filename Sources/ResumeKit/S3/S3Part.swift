/// One part of an S3 multipart upload as the token records it, written after S3 acknowledged it.
public struct S3Part: Codable, Sendable, Equatable {
    /// 1-based, as S3 numbers them.
    public var number: Int
    public var size: Int64
    /// Lower-case hex MD5 of the part's bytes, when it went with `Content-MD5` (what S3's ETag must equal).
    public var md5: String?
    /// The part's flexible checksum as S3's headers carry it (base64 of the CRC, big-endian), when it went with one.
    public var checksum: String?
    /// The ETag S3 answered, quotes included.
    public var etag: String

    public init(number: Int, size: Int64, md5: String? = nil, checksum: String? = nil, etag: String) {
        self.number = number
        self.size = size
        self.md5 = md5
        self.checksum = checksum
        self.etag = etag
    }
}
