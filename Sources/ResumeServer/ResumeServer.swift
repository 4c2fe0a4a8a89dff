#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization

/// A running `resumectl serve`: ranged GET and HEAD of the files in a folder, and uploads into it
/// (plain PUT/POST, or resumable per draft-ietf-httpbis-resumable-upload or tus 1.0). Unfinished
/// resumable uploads are kept on disk (``UploadStore``): a restart, even after `kill -9`, continues
/// each one at the same URL from its durable offset.
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
    private let store: (any UploadBackend)?
    private let table: UploadTable
    private let stopped = Mutex(false)

    private init(
        host: String,
        port: Int,
        secure: Bool,
        group: MultiThreadedEventLoopGroup,
        threadPool: NIOThreadPool,
        listener: any Channel,
        store: (any UploadBackend)?,
        table: UploadTable
    ) {
        self.host = host
        self.port = port
        self.secure = secure
        self.group = group
        self.threadPool = threadPool
        self.listener = listener
        self.store = store
        self.table = table
    }

    /// Binds and starts serving; returns once connections are accepted.
    ///
    /// - Throws: ``ServeError`` when the folder is missing or the address cannot be bound.
    public static func start(_ configuration: ServerConfiguration) async throws -> ResumeServer {
        // On S3 there is no folder: `root` stays empty and nothing reads the file system below it.
        let s3 = try configuration.s3.map { s3 throws(ServeError) in
            try S3StoreSetup.open(s3, readOnly: configuration.readOnly, overwrite: configuration.overwrite, log: configuration.log)
        }
        let root = s3 == nil ? try canonicalDirectory(configuration.directory) : ""
        let tls = try configuration.tls.map { files throws(ServeError) in try ServerTLS.context(files) }
        let logins = try configuration.htpasswd.map { path throws(ServeError) in
            Logins(passwords: try PasswordFile.load(path: path), publicRead: configuration.publicRead, log: configuration.log)
        }
        let expiry = max(Int64(1), Int64(configuration.uploadTimeout.components.seconds) * 1000
            + configuration.uploadTimeout.components.attoseconds / 1_000_000_000_000_000)
        let slots = configuration.maxUploads.map(UploadSlots.init(limit:))
        // S3 calls block for a network round trip each: more threads than the file store's two.
        let threadPool = NIOThreadPool(numberOfThreads: s3 == nil ? 2 : 16)
        threadPool.start()
        let table = UploadTable(slots: slots, remote: s3, threadPool: threadPool)
        var store: (any UploadBackend)?
        if let s3, !configuration.readOnly {
            store = s3
        } else if s3 == nil && !configuration.readOnly {
            let opened = try UploadStore(root: root)
            let log = configuration.log
            for record in opened.recover(now: WallClock.millis(), replacing: configuration.overwrite, log: { log?($0) }) {
                table.insert(record)
            }
            for record in opened.finishedUploads(now: WallClock.millis()) { table.insert(record, finished: true) }
            let swept = UploadStore.sweepLegacy(root: root)
            if swept > 0 { log?("removed \(swept) unfinished upload file(s) left by an earlier release") }
            store = opened
        }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: System.coreCount)
        let admission = UploadAdmission(
            root: s3 == nil ? root : nil,
            maxUploadSize: configuration.maxUploadSize,
            overwrite: configuration.overwrite,
            slots: slots
        )
        let pipeline = PipelineFactory(
            configuration: configuration,
            root: root,
            threadPool: threadPool,
            admission: admission,
            tls: tls,
            logins: logins,
            store: store,
            objects: s3.map { S3Objects(store: $0.store, log: configuration.log) },
            table: table,
            expiry: expiry
        )
        if let store { ExpirySweep.schedule(on: group.next(), table: table, store: store, threadPool: threadPool, expiry: expiry, log: configuration.log) }

        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.backlog, value: 256)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(ChannelOptions.tcpOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try pipeline.configure(channel)
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
            store: store,
            table: table
        )
    }

    /// Stops listening and closes every connection. Unfinished resumable uploads stay in the store
    /// for the next start; plain uploads in progress, which nothing can continue, are deleted.
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
        if let store {
            for id in table.plainIDs() { store.remove(id) }
        }
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
/// (GET/HEAD, upload admission) → ``DraftHandler`` (the IETF draft and plain uploads).
private struct PipelineFactory: Sendable {
    let configuration: ServerConfiguration
    let root: String
    let threadPool: NIOThreadPool
    let admission: UploadAdmission
    let tls: NIOSSLContext?
    let logins: Logins?
    /// `nil` when read-only.
    let store: (any UploadBackend)?
    /// Served objects, with `--store s3://`.
    let objects: S3Objects?
    let table: UploadTable
    let expiry: Int64

    func configure(_ channel: any Channel) throws {
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
                LoginGate(logins: logins, threadPool: threadPool, uploadPrefixes: [DraftMachine.prefix, TusHandler.prefix]))
        }
        if let store {
            try sync.addHandler(
                TusHandler(
                    settings: .init(
                        root: objects == nil ? root : nil, store: store, table: table, admission: admission, threadPool: threadPool,
                        expiry: expiry, log: configuration.log
                    )
                )
            )
        }
        try sync.addHandler(
            StaticFileHandler(
                settings: .init(
                    root: root,
                    acceptsUploads: store != nil,
                    resumptionPrefix: DraftMachine.prefix,
                    admission: admission,
                    secure: tls != nil,
                    objects: objects
                ),
                threadPool: threadPool
            )
        )
        guard let store else { return }
        try sync.addHandler(
            DraftHandler(
                settings: .init(
                    store: store, table: table, threadPool: threadPool, slots: admission.slots,
                    overwrite: configuration.overwrite, maxUploadSize: configuration.maxUploadSize,
                    expiry: expiry, log: configuration.log
                )
            )
        )
    }
}

/// Drops the uploads whose `--upload-timeout` ran out, on a timer (also those found at start).
private enum ExpirySweep {
    static func schedule(
        on loop: any EventLoop, table: UploadTable, store: any UploadBackend, threadPool: NIOThreadPool, expiry: Int64,
        log: (@Sendable (String) -> Void)?
    ) {
        let every = TimeAmount.milliseconds(min(max(expiry / 2, 50), 30_000))
        let s3 = store as? S3Backend
        loop.scheduleRepeatedTask(initialDelay: every, delay: every) { _ in
            let now = WallClock.millis()
            let expired = table.takeExpired(now: now)
            if let s3 {
                // What S3 holds is the truth: any instance aborts an expired upload nobody is writing.
                threadPool.submit { _ in
                    for target in s3.sweepExpired(now: now) { log?("upload \(target) expired, its multipart upload aborted") }
                }
                return
            }
            guard !expired.isEmpty else { return }
            threadPool.submit { _ in
                for entry in expired {
                    store.remove(entry.record.id)
                    if !entry.finished { log?("upload /\(entry.record.target.joined(separator: "/")) expired after \(entry.record.offset) bytes") }
                }
            }
        }
    }
}

extension TimeAmount {
    fileprivate init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
