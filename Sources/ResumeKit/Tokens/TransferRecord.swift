import FoundationEssentials

/// How a transfer ended, as kept in `results/<id>.json` after its token is gone (or beside it, while it
/// can still be resumed), so that a finished transfer still answers `resume`, `show`, `wait` and `list`.
public struct TransferRecord: Codable, Sendable, Equatable {
    public static let currentVersion = 1

    public enum Outcome: String, Codable, Sendable {
        /// The file is in place (download) or the server has it all (upload).
        case done
        /// Stopped by `pause`, SIGTERM, SIGHUP or Ctrl-C; the token is kept.
        case paused
        /// Failed; `resumable` says whether the token can continue it.
        case failed
        /// Forgotten by `cancel`: the token and the partial data are gone.
        case cancelled
    }

    public var version: Int
    public var id: String
    public var kind: ResumeToken.Kind
    public var outcome: Outcome
    /// The exit status the command that ran it gave (`wait` returns it).
    public var exit: Int32
    /// True when `resume` can continue it (the token is kept).
    public var resumable: Bool
    /// The URL, without any password in it.
    public var url: String
    /// Download: the file written. Upload: the source file.
    public var path: String?
    /// Bytes transferred in all (done) or committed so far (stopped).
    public var bytes: Int64?
    public var sha256: String?
    /// The error line, for a transfer that did not end done.
    public var error: String?
    public var endedAt: Date

    public init(
        id: String, kind: ResumeToken.Kind, outcome: Outcome, exit: Int32, resumable: Bool, url: String, path: String?,
        bytes: Int64? = nil, sha256: String? = nil, error: String? = nil, endedAt: Date = Date()
    ) {
        self.version = Self.currentVersion
        self.id = id
        self.kind = kind
        self.outcome = outcome
        self.exit = exit
        self.resumable = resumable
        self.url = Redact.url(url)
        self.path = path
        self.bytes = bytes
        self.sha256 = sha256
        self.error = error.map(Redact.text)
        self.endedAt = endedAt
    }

    /// What the command printed on stdout when this transfer succeeded: the path (download) or the URL (upload).
    public var resultLine: String { kind == .download ? (path ?? url) : url }
}
