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
    /// Replace a file that exists at an upload's path; without it such an upload gets 409.
    public var overwrite: Bool = false
    /// The largest upload accepted, in bytes (413 beyond it); `nil` for no limit but the disk's.
    public var maxUploadSize: Int64? = nil
    /// How many uploads may be in progress at once (503 beyond it); `nil` for no limit.
    public var maxUploads: Int? = nil
    /// A request head must be complete within this long after the connection opened or the
    /// previous response ended, else the connection is closed (a slow head holds a connection).
    public var headerTimeout: Duration = .seconds(30)
    /// A request body that sends nothing for this long while the server waits for it is ended and its
    /// connection closed (what arrived of an upload stays, as after any cut).
    public var bodyTimeout: Duration = .seconds(60)
    /// Serve HTTPS with this certificate chain (PEM, leaf first) and private key (PEM).
    public var tls: TLSFiles? = nil
    /// An htpasswd file (bcrypt or SHA-crypt entries): every request must log in with HTTP Basic.
    public var htpasswd: String? = nil
    /// With ``htpasswd``: GET and HEAD need no login, uploads still do.
    public var publicRead: Bool = false
    /// Serve an S3 prefix instead of ``directory`` (`--store s3://BUCKET/PREFIX/`).
    public var s3: S3StoreConfiguration? = nil
    /// The most connections open at once; one more is answered 503 and closed. `nil`: half of the
    /// descriptors the process may open beyond its own (the other half is room for files).
    public var maxConnections: Int? = nil
    /// Event-loop threads; `nil`: one a CPU core.
    public var threads: Int? = nil
    /// A connection whose client takes no byte of an answer for this long is dropped.
    public var sendTimeout: Duration = .seconds(60)
    /// Answer `GET /.resumectl/metrics` (Prometheus text).
    public var metrics: Bool = true
    /// With ``htpasswd``: the metrics need no login.
    public var metricsPublic: Bool = false
    /// Run after each upload's file is in place (see ``CompletionHookSettings``).
    public var completionHook: CompletionHookSettings? = nil

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

/// `--on-upload-complete`: a program run once an upload's file is in place, at least once per upload
/// (a run due when the server stopped happens after its next start).
public struct CompletionHookSettings: Sendable, Equatable {
    /// The program and its arguments, run without a shell.
    public var command: [String]
    /// How many may run at once; more wait their turn.
    public var parallel: Int = 4
    /// A run still going after this long is killed (and counts as failed).
    public var timeout: Duration = .seconds(300)

    public init(command: [String]) {
        self.command = command
    }

    /// Where the program is (`PATH` searched as a shell would), or `nil` when there is none to run.
    public var programPath: String? { command.first.flatMap(HookProcess.locate) }
}

/// The files of an HTTPS listener.
public struct TLSFiles: Sendable, Equatable {
    /// PEM certificates: the server's first, then any intermediates, all sent to clients.
    public var certificateChain: String
    /// The PEM private key of the first certificate.
    public var privateKey: String

    public init(certificateChain: String, privateKey: String) {
        self.certificateChain = certificateChain
        self.privateKey = privateKey
    }
}

/// `serve --store s3://BUCKET/PREFIX/`: where, and how the instances sharing it coordinate.
public struct S3StoreConfiguration: Sendable {
    /// `s3://BUCKET/PREFIX/`.
    public var url: String
    /// `--endpoint-url`; otherwise from the environment and `~/.aws` as the client's S3 commands read it.
    public var endpoint: String?
    /// The variables the AWS configuration is read from (`AWS_*`, `HOME`).
    public var environment: [String: String]
    /// No other instance shares the prefix: locks live in memory, and conditional writes are not needed.
    public var singleInstance: Bool = false
    /// How long an upload's lock on S3 lasts without renewal (a dead holder's lock is taken over after it).
    public var lockLifetime: Duration = .seconds(30)
    /// The size of the parts uploads are stored in (at least S3's 5 MiB).
    public var partSize: Int64 = 8 << 20

    public init(url: String, endpoint: String? = nil, environment: [String: String]) {
        self.url = url
        self.endpoint = endpoint
        self.environment = environment
    }
}
