/// The S3 choices of one command: where and as whom (`--profile --region --endpoint-url --path-style`),
/// and for uploads how (`--part-size --parallel --s3-checksum`).
public struct S3Options: Sendable, Equatable {
    public var choices: S3Choices
    public var forcePathStyle: Bool
    /// nil: 8 MiB, raised when the file needs more than 10,000 parts.
    public var partSize: Int64?
    /// Parts sent at once.
    public var parallel: Int
    /// What each part carries for S3 to check (a new upload's; a resumed one keeps its own).
    public var checksum: S3Checksum

    public init(
        choices: S3Choices = S3Choices(), forcePathStyle: Bool = false, partSize: Int64? = nil, parallel: Int = 4,
        checksum: S3Checksum = .crc32c
    ) {
        self.checksum = checksum
        self.choices = choices
        self.forcePathStyle = forcePathStyle
        self.partSize = partSize
        self.parallel = parallel
    }
}
