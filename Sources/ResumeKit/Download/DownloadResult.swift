/// What a finished download produced.
public struct DownloadResult: Sendable, Equatable {
    public var path: String
    public var bytes: Int64
    public var sha256: String?
    /// True when the file was there already and nothing was fetched.
    public var alreadyComplete: Bool
}
