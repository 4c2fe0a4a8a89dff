/// The checksum each part (or a single PUT) of an S3 upload carries, which S3 checks the bytes against
/// (`--s3-checksum`). The CRCs are S3's flexible checksums: the algorithm is declared when the multipart
/// upload is created and CompleteMultipartUpload lists each part's; MD5 is `Content-MD5`, for servers that
/// know nothing newer; `none` sends no checksum (a resume then trusts a listed part by its size and ETag).
public enum S3Checksum: String, Sendable, Equatable, CaseIterable, Codable {
    case crc32c, crc32, md5, none

    /// The digest computed over each part, nil for `none`.
    var digest: DigestAlgorithm? {
        switch self {
        case .crc32c: .crc32c
        case .crc32: .crc32
        case .md5: .md5
        case .none: nil
        }
    }

    /// S3's name of a flexible checksum (`CRC32C`), nil for MD5 and none.
    var flexibleName: String? {
        switch self {
        case .crc32c: "CRC32C"
        case .crc32: "CRC32"
        case .md5, .none: nil
        }
    }
}
