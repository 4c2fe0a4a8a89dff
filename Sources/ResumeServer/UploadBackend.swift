/// Where unfinished uploads are kept: a folder (``UploadStore``, the default) or an S3 prefix
/// (``S3Backend``, `serve --store s3://`). The handlers speak only to this. Every method but
/// ``makeSink(_:)`` blocks: they run on the thread pool.
protocol UploadBackend: Sendable {
    /// A fresh upload id, unique in the store: 128 random bits in hex.
    func newID() -> String
    /// Brings the uploads back at start: each one that can continue, and the finished ones whose URLs still
    /// answer, go into `table`; what cannot continue goes, with a log line each.
    func recover(into table: UploadTable, replacing: Bool, log: (String) -> Void)
    /// Makes a new upload durable before anyone hears of it.
    func create(_ record: UploadRecord) throws(UploadFailure)
    /// Puts a complete upload at its destination (409 when something is there and not `replacing`).
    func finish(_ record: UploadRecord, replacing: Bool) throws(UploadFailure)
    /// tus concatenation: `record` (a final upload) made of the partial uploads `parts` in order and finished;
    /// returns it. A failure or a crash never leaves a file in part: the client's retry makes a new one.
    func concatenate(_ record: UploadRecord, parts: [UploadRecord], replacing: Bool) throws(UploadFailure)
        -> UploadRecord
    /// Forgets an upload and its bytes.
    func remove(_ id: String)
    /// The sink one request's body goes into.
    func makeSink(_ setup: UploadSinkSetup) -> any UploadSink
}

extension UploadBackend {
    func newID() -> String { UploadStore.newID() }
}

extension UploadStore: UploadBackend {
    func makeSink(_ setup: UploadSinkSetup) -> any UploadSink {
        UploadAppender(store: self, setup: setup)
    }
}

/// Uploads that other instances may have moved on (S3): the table reads one back before it answers.
protocol UploadRemote: Sendable {
    /// The upload as the shared store holds it now (`finished`: completed and kept only to answer),
    /// or `nil` when it holds none. Blocks.
    func load(_ id: String) throws(UploadFailure) -> (record: UploadRecord, finished: Bool)?
}
