#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import NIOCore
import NIOHTTP1
import NIOHTTPTypesHTTP1
import NIOPosix
import NIOResumableUpload
import NIOSSL
import Synchronization

/// A running `resumectl serve`: ranged GET and HEAD of the files in a folder, and uploads into it
/// (plain PUT/POST, or resumable per draft-ietf-httpbis-resumable-upload through NIOResumableUpload).
///
/// ```swift
/// let server = try await ResumeServer.start(ServerConfiguration(directory: "/srv/files", port: 0))
/// print(server.url)                 // http://127.0.0.1:41234
/// try await server.shutdown()
/// ```
public final class ResumeServer: Sendable {
    /// The address the server listens on, as configured.
    public let host: String
    /// The port actually bound: the configured one, or the one the system chose for port 0.
    public let port: Int
    /// Whether it speaks HTTPS.
    public let secure: Bool

    /// `http://HOST:PORT` or `https://HOST:PORT`, with an IPv6 address in brackets.
    public var url: String {
        "\(secure ? "https" : "http")://\(Self.authority(host: host, port: port))"
    }

    private let group: MultiThreadedEventLoopGroup
    private let threadPool: NIOThreadPool
    private let listener: any Channel
    private let temporaryFiles: TemporaryFiles
    private let stopped = Mutex(false)

    private init(
        host: String,
        port: Int,
        secure: Bool,
        group: MultiThreadedEventLoopGroup,
        threadPool: NIOThreadPool,
        listener: any Channel,
        temporaryFiles: TemporaryFiles
    ) {
        self.host = host
        self.port = port
        self.secure = secure
        self.group = group
        self.threadPool = threadPool
        self.listener = listener
        self.temporaryFiles = temporaryFiles
    }

    /// Binds and starts serving; returns once connections are accepted.
    ///
    /// - Throws: ``ServeError`` when the folder is missing or the address cannot be bound.
    public static func start(_ configuration: ServerConfiguration) async throws -> ResumeServer {
        let root = try canonicalDirectory(configuration.directory)
        let tls = try configuration.tls.map { files throws(ServeError) in try ServerTLS.context(files) }
        let logins = try configuration.htpasswd.map { path throws(ServeError) in
            Logins(passwords: try PasswordFile.load(path: path), publicRead: configuration.publicRead, log: configuration.log)
        }
        let swept = TemporaryFiles.sweep(root: root)
        if swept > 0 { configuration.log?("removed \(swept) unfinished upload file(s) left by an earlier run") }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: System.coreCount)
        let threadPool = NIOThreadPool(numberOfThreads: 2)
        threadPool.start()
        let temporaryFiles = TemporaryFiles()
        let expiredUploads = ExpiredUploads()
        let admission = UploadAdmission(
            root: root,
            maxUploadSize: configuration.maxUploadSize,
            overwrite: configuration.overwrite,
            slots: configuration.maxUploads.map(UploadSlots.init(limit:))
        )
        // Upload `Location`s are path-only: a client resolves them against the URL it used, so HEAD
        // and PATCH reach the server the same way the creation did (a reverse proxy, a port forward,
        // a wildcard bind, a host name), which an origin built from the bound address would not.
        let uploadContext = HTTPResumableUploadContext(origin: "", timeout: TimeAmount(configuration.uploadTimeout))
        let pipeline = PipelineFactory(
            configuration: configuration,
            root: root,
            threadPool: threadPool,
            temporaryFiles: temporaryFiles,
            expiredUploads: expiredUploads,
            admission: admission,
            tls: tls,
            logins: logins,
            tusUploads: TusUploads()
        )

        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.backlog, value: 256)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(ChannelOptions.tcpOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try pipeline.configure(channel, uploadContext: uploadContext)
                }
            }

        let listener: any Channel
        do {
            listener = try await bootstrap.bind(host: configuration.host, port: configuration.port).get()
        } catch {
            try? await group.shutdownGracefully()
            try? await threadPool.shutdownGracefully()
            throw listenError(error, configuration: configuration)
        }
        let port = listener.localAddress?.port ?? configuration.port
        return ResumeServer(
            host: configuration.host,
            port: port,
            secure: tls != nil,
            group: group,
            threadPool: threadPool,
            listener: listener,
            temporaryFiles: temporaryFiles
        )
    }

    /// Stops listening, closes every connection, and deletes the temporary files of unfinished
    /// uploads (NIO keeps upload state in memory only, so they could never be resumed).
    public func shutdown() async throws {
        let alreadyStopped = stopped.withLock { value in
            defer { value = true }
            return value
        }
        guard !alreadyStopped else { return }
        try? await listener.close()
        // The file pool first, while the event loops can still take its last results; then no
        // sink can touch a temporary file any more and the sweep is safe.
        try await threadPool.shutdownGracefully()
        try await group.shutdownGracefully()
        temporaryFiles.removeAll()
    }

    private static func canonicalDirectory(_ path: String) throws(ServeError) -> String {
        var info = stat()
        guard stat(path, &info) == 0 else { throw .directoryNotFound(path: path) }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw .notADirectory(path: path) }
        guard let root = SafePath.canonical(path) else { throw .directoryNotFound(path: path) }
        return root
    }

    private static func listenError(_ error: any Error, configuration: ServerConfiguration) -> ServeError {
        if let error = error as? IOError, error.errnoCode == EADDRINUSE {
            return .addressInUse(host: configuration.host, port: configuration.port)
        }
        return .cannotListen(host: configuration.host, port: configuration.port, reason: "\(error)")
    }

    private static func authority(host: String, port: Int) -> String {
        host.contains(":") && !host.hasPrefix("[") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}

/// Builds one connection's pipeline:
/// [TLS] → HTTP/1 codec → 431/400 answers → head timeout → access log → [logins] → [tus] → static files
/// (GET/HEAD, upload admission) → HTTP types → NIO resumable uploads (the IETF draft) → ``UploadSink``.
private struct PipelineFactory: Sendable {
    let configuration: ServerConfiguration
    let root: String
    let threadPool: NIOThreadPool
    let temporaryFiles: TemporaryFiles
    let expiredUploads: ExpiredUploads
    let admission: UploadAdmission
    let tls: NIOSSLContext?
    let logins: Logins?
    let tusUploads: TusUploads

    func configure(_ channel: any Channel, uploadContext: HTTPResumableUploadContext) throws {
        let sync = channel.pipeline.syncOperations
        if let tls {
            try channel.syncOptions?.setOption(ChannelOptions.autoRead, value: false)
            try sync.addHandler(ReadOnActive())
            try sync.addHandler(NIOSSLServerHandler(context: tls))
        }
        try sync.configureHTTPServerPipeline(
            withPipeliningAssistance: true,
            withErrorHandling: false,
            withEncoderConfiguration: .init(),
            withDecoderLimitConfiguration: ProtocolErrorResponder.decoderLimits
        )
        try sync.addHandler(ProtocolErrorResponder())
        try sync.addHandler(HeaderTimeout(limit: TimeAmount(configuration.headerTimeout)))
        if let log = configuration.log {
            try sync.addHandler(AccessLogHandler(log: log))
        }
        if let logins {
            try sync.addHandler(
                LoginGate(logins: logins, threadPool: threadPool, uploadPrefixes: [Self.resumptionPrefix, TusUploads.prefix]))
        }
        let acceptsUploads = !configuration.readOnly
        if acceptsUploads {
            try sync.addHandler(
                TusHandler(
                    settings: .init(
                        root: root,
                        uploads: tusUploads,
                        admission: admission,
                        threadPool: threadPool,
                        temporaryFiles: temporaryFiles,
                        expiry: configuration.uploadTimeout,
                        log: configuration.log
                    )
                )
            )
        }
        let creationPath = UploadCreationPath(prefix: Self.resumptionPrefix)
        try sync.addHandler(
            StaticFileHandler(
                settings: .init(
                    root: root,
                    acceptsUploads: acceptsUploads,
                    resumptionPrefix: Self.resumptionPrefix,
                    expiredUploads: expiredUploads,
                    admission: admission,
                    secure: tls != nil
                ),
                threadPool: threadPool,
                creationPath: creationPath
            )
        )
        guard acceptsUploads else { return }
        let sinkSettings = UploadSink.Settings(
            root: root,
            threadPool: threadPool,
            temporaryFiles: temporaryFiles,
            expiredUploads: expiredUploads,
            log: configuration.log,
            overwrite: configuration.overwrite,
            maxUploadSize: configuration.maxUploadSize,
            slots: admission.slots
        )
        try sync.addHandler(HTTP1ToHTTPServerCodec(secure: tls != nil))
        // `channelConfigurator:` rather than `handlers:`: a fresh sink for every logical upload.
        try sync.addHandler(
            HTTPResumableUploadHandler(context: uploadContext) { uploadChannel in
                let sink = UploadSink(settings: sinkSettings, resumptionPath: creationPath.take())
                try? uploadChannel.pipeline.syncOperations.addHandler(sink)
            }
        )
    }

    /// NIO's default resumption path.
    static let resumptionPrefix = "/resumable_upload/"
}

extension TimeAmount {
    fileprivate init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
