/// A part as ListParts reports it.
public struct ListedPart: Sendable, Equatable {
    public var number: Int
    public var size: Int64
    public var etag: String
    /// Its flexible checksums by S3's name (`CRC32C` → base64), as S3 lists them for an upload created with one.
    public var checksums: [String: String]

    public init(number: Int, size: Int64, etag: String, checksums: [String: String] = [:]) {
        self.number = number
        self.size = size
        self.etag = etag
        self.checksums = checksums
    }
}
