/// Where unfinished uploads are kept: a folder (``UploadStore``, the default) or an S3 prefix
/// (``S3Backend``, `serve --store s3://`). The handlers speak only to this. Every method but
/// ``makeSink(_:)`` blocks: they run on the thread pool.
protocol UploadBackend: Sendable {
    /// Makes a new upload durable before anyone hears of it.
    func create(_ record: UploadRecord) throws(UploadFailure)
    /// Puts a complete upload at its destination (409 when something is there and not `replacing`).
    func finish(_ record: UploadRecord, replacing: Bool) throws(UploadFailure)
    /// Forgets an upload and its bytes.
    func remove(_ id: String)
    /// The sink one request's body goes into.
    func makeSink(_ setup: UploadSinkSetup) -> any UploadSink
}

extension UploadStore: UploadBackend {
    func makeSink(_ setup: UploadSinkSetup) -> any UploadSink {
        UploadAppender(
            record: setup.record, store: self, table: setup.table, threadPool: setup.threadPool,
            eventLoop: setup.eventLoop,
            limit: setup.limit, checkpoints: setup.checkpoints, expiry: setup.expiry, settled: setup.settled)
    }
}

/// Uploads that other instances may have moved on (S3): the table reads one back before it answers.
protocol UploadRemote: Sendable {
    /// The upload as the shared store holds it now (`finished`: completed and kept only to answer),
    /// or `nil` when it holds none. Blocks.
    func load(_ id: String) throws(UploadFailure) -> (record: UploadRecord, finished: Bool)?
}
