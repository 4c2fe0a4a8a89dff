/// What a finished download produced.
public struct DownloadResult: Sendable, Equatable {
    public var path: String
    public var bytes: Int64
    public var sha256: String?
}
