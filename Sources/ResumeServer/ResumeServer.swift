import Glibc
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
    private let connections: OpenConnections
    private let hooks: HookRunner?
    private let log: (@Sendable (String) -> Void)?
    private let stopped = Mutex(false)

    private init(_ parts: Parts, listener: any Channel, port: Int) {
        host = parts.configuration.host
        self.port = port
        secure = parts.secure
        group = parts.group
        threadPool = parts.threadPool
        self.listener = listener
        store = parts.store
        table = parts.table
        connections = parts.connections
        hooks = parts.hooks
        log = parts.configuration.log
    }

    /// What ``start(_:)`` assembles before it binds.
    private struct Parts {
        var configuration: ServerConfiguration
        var secure: Bool
        var group: MultiThreadedEventLoopGroup
        var threadPool: NIOThreadPool
        var store: (any UploadBackend)?
        var table: UploadTable
        var connections: OpenConnections
        var hooks: HookRunner?
    }

    /// Binds and starts serving; returns once connections are accepted.
    ///
    /// - Throws: ``ServeError`` when the folder is missing or the address cannot be bound.
    public static func start(_ configuration: ServerConfiguration) async throws -> ResumeServer {
        var configuration = configuration
        // Every line, whoever writes it, passes here once: what a client sent never breaks a line.
        if let write = configuration.log {
            configuration.log = { @Sendable line in write(LogLine.escaped(line)) }
        }
        let metrics = configuration.metrics ? ServerMetrics() : nil
        // On S3 there is no folder: `root` stays empty and nothing reads the file system below it.
        let s3 = try configuration.s3.map { s3 throws(ServeError) in
            try S3StoreSetup.open(
                s3, readOnly: configuration.readOnly, overwrite: configuration.overwrite,
                hook: configuration.completionHook,
                metrics: metrics, log: configuration.log)
        }
        let root = s3 == nil ? try canonicalDirectory(configuration.directory) : ""
        let tls = try configuration.tls.map { files throws(ServeError) in try ServerTLS.context(files) }
        let logins = try configuration.htpasswd.map { path throws(ServeError) in
            Logins(
                passwords: try PasswordFile.load(path: path), publicRead: configuration.publicRead,
                log: configuration.log)
        }
        let expiry = max(
            Int64(1),
            Int64(configuration.uploadTimeout.components.seconds) * 1000
                + configuration.uploadTimeout.components.attoseconds / 1_000_000_000_000_000)
        let slots = configuration.maxUploads.map(UploadSlots.init(limit:))
        let descriptors = DescriptorLimit.raise()
        var cap = configuration.maxConnections ?? DescriptorLimit.defaultConnections(limit: descriptors)
        if cap > DescriptorLimit.mostConnections(limit: descriptors) {
            cap = DescriptorLimit.mostConnections(limit: descriptors)
            configuration.log?("--max-connections lowered to \(cap): the process may open \(descriptors) descriptors")
        }
        let connections = OpenConnections(limit: cap)
        // S3 calls block for a network round trip each: more threads than the file store's two.
        let threadPool = NIOThreadPool(numberOfThreads: s3 == nil ? 2 : 16)
        threadPool.start()
        let table = UploadTable(slots: slots, remote: s3, threadPool: threadPool)
        var store: (any UploadBackend)?
        var hooks: HookRunner?
        if let s3, !configuration.readOnly {
            store = s3
            hooks = s3.hooks
        } else if s3 == nil && !configuration.readOnly {
            let log = configuration.log
            hooks = try configuration.completionHook.map { settings throws(ServeError) in
                try HookRunner(settings: settings, root: root, metrics: metrics, log: log)
            }
            store = try UploadStore(root: root, metrics: metrics, hooks: hooks)
            // The hooks left due first: finishing a record below makes (and queues) new ones.
            hooks?.resumeDue()
        }
        store?.recover(into: table, replacing: configuration.overwrite) { configuration.log?($0) }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: configuration.threads ?? System.coreCount)
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
            expiry: expiry,
            connections: connections,
            metrics: metrics
        )
        if let store {
            ExpirySweep.schedule(
                on: group.next(), table: table, store: store, threadPool: threadPool, expiry: expiry,
                log: configuration.log)
        }

        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.backlog, value: 256)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            // Past the descriptor limit `accept` fails with EMFILE: wait a moment instead of spinning on it.
            .serverChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(AcceptBackoffHandler())
                }
            }
            .childChannelOption(ChannelOptions.tcpOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try pipeline.configure(channel)
                }
            }

        let parts = Parts(
            configuration: configuration, secure: tls != nil, group: group, threadPool: threadPool, store: store,
            table: table,
            connections: connections, hooks: hooks)
        let listener: any Channel
        do {
            listener = try await bootstrap.bind(host: configuration.host, port: configuration.port).get()
        } catch {
            try? await group.shutdownGracefully()
            try? await threadPool.shutdownGracefully()
            hooks?.shutdown()
            throw listenError(error, configuration: configuration)
        }
        return ResumeServer(parts, listener: listener, port: listener.localAddress?.port ?? configuration.port)
    }

    /// Stops at once: ``stop(drain:)`` without a drain.
    public func shutdown() async throws {
        await stop(drain: .zero)
    }

    /// Stops listening; lets the requests in progress go on for up to `drain` (a connection closes
    /// once its request is answered, an idle one at once), then closes the rest. Every upload's
    /// bytes received by then are made durable before this returns, so a restart continues each one
    /// from there (a tus append with a checksum counts whole or not at all, as always). Plain uploads
    /// in progress, which nothing can continue, are deleted. Hooks not run yet stay due for the next start.
    public func stop(drain: Duration) async {
        let alreadyStopped = stopped.withLock { value in
            defer { value = true }
            return value
        }
        guard !alreadyStopped else { return }
        try? await listener.close()
        let deadline = ContinuousClock.now + drain
        if drain > .zero {
            connections.quiesce()
            while connections.count > 0 && ContinuousClock.now < deadline {
                try? await Task.sleep(for: .milliseconds(50))
            }
            if connections.count > 0 {
                log?("stopping: \(connections.count) connection(s) still busy after the drain time, closed")
            }
        }
        connections.closeAll()
        // Each closed upload request settles on the thread pool: wait for that before stopping the pool.
        let loop = group.next()
        let settled = loop.makePromise(of: Void.self)
        table.allSettled(on: loop).cascade(to: settled)
        // A store that hangs (S3 unreachable) must not keep the process from stopping: the first wins.
        let bound = loop.scheduleTask(in: .seconds(30)) { settled.succeed() }
        try? await settled.futureResult.get()
        bound.cancel()
        try? await threadPool.shutdownGracefully()
        try? await group.shutdownGracefully()
        hooks?.shutdown()
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
