/// What `resumectl serve` exposes and where it listens.
public struct ServerConfiguration: Sendable {
    /// Folder whose files are served and below which uploads land.
    public var directory: String
    /// Address to listen on: an IP address or a host name.
    public var host: String
    /// TCP port; `0` lets the system pick a free one (read it back from ``ResumeServer/port``).
    public var port: Int
    /// Refuse every upload (405); only GET and HEAD are served.
    public var readOnly: Bool
    /// How long an interrupted draft upload waits for its client to resume before its data is
    /// deleted.
    public var uploadTimeout: Duration
    /// Receives one line per request and notes about abandoned or failed uploads; `nil` for silence.
    public var log: (@Sendable (String) -> Void)?

    public init(
        directory: String,
        host: String = "127.0.0.1",
        port: Int = 8080,
        readOnly: Bool = false,
        uploadTimeout: Duration = .seconds(3600),
        log: (@Sendable (String) -> Void)? = nil
    ) {
        self.directory = directory
        self.host = host
        self.port = port
        self.readOnly = readOnly
        self.uploadTimeout = uploadTimeout
        self.log = log
    }
}
