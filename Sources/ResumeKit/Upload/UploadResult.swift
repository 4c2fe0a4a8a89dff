/// What a finished upload produced.
public struct UploadResult: Sendable, Equatable {
    /// The URL the file was uploaded to.
    public var url: String
    public var bytes: Int64
    public var sha256: String?
}
