import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// Builds one connection's pipeline (or refuses it past `--max-connections`):
/// byte counts and send timeout → [TLS] → HTTP/1 codec → ``ExchangeObserver`` (431/400 answers, head timeout,
/// log line, request counts) → [metrics] → [logins]
/// → [uploads: ``UploadHandler``] → static files (GET/HEAD).
struct PipelineFactory: Sendable {
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
    let connections: OpenConnections
    /// `nil` with `--no-metrics`.
    let metrics: ServerMetrics?

    func configure(_ channel: any Channel) throws {
        let sync = channel.pipeline.syncOperations
        guard connections.admit(channel) else {
            try sync.addHandler(ConnectionRefusal(plain: tls == nil))
            return
        }
        try sync.addHandler(
            SendTimeout(limit: TimeAmount(configuration.sendTimeout), log: configuration.log, metrics: metrics))
        if let tls {
            try channel.syncOptions?.setOption(ChannelOptions.autoRead, value: false)
            try sync.addHandler(ReadOnActive())
            try sync.addHandler(NIOSSLServerHandler(context: tls))
        }
        try sync.configureHTTPServerPipeline(
            withPipeliningAssistance: true,
            withErrorHandling: false,
            withEncoderConfiguration: .init(),
            withDecoderLimitConfiguration: ExchangeObserver.decoderLimits
        )
        try sync.addHandler(
            ExchangeObserver(
                headLimit: TimeAmount(configuration.headerTimeout), bodyLimit: TimeAmount(configuration.bodyTimeout),
                log: configuration.log, metrics: metrics))
        let endpoint = metrics.map { MetricsEndpoint.Sources(metrics: $0, connections: connections, table: table) }
        if let endpoint, logins == nil || configuration.metricsPublic {
            try sync.addHandler(MetricsEndpoint(sources: endpoint))
        }
        if let logins {
            // The metrics path is listed so that `--public-read` does not open it: it is not a download.
            try sync.addHandler(
                LoginGate(
                    logins: logins, threadPool: threadPool,
                    uploadPrefixes: [DraftMachine.prefix, TusMachine.prefix, MetricsEndpoint.path]))
            if let endpoint, !configuration.metricsPublic { try sync.addHandler(MetricsEndpoint(sources: endpoint)) }
        }
        if let store {
            try sync.addHandler(
                UploadHandler(
                    settings: .init(
                        root: objects == nil ? root : nil, store: store, table: table, admission: admission,
                        threadPool: threadPool, expiry: expiry, log: configuration.log)))
        }
        try sync.addHandler(
            StaticFileHandler(
                settings: .init(
                    root: root,
                    acceptsUploads: store != nil,
                    resumptionPrefix: DraftMachine.prefix,
                    overwrite: configuration.overwrite,
                    secure: tls != nil,
                    objects: objects
                ),
                threadPool: threadPool
            )
        )
    }
}
