import NIOCore
import NIOPosix

/// Where one request's body goes: ``UploadAppender`` for the file store, ``S3Appender`` for S3. The
/// handlers feed it the same way whatever the store: ``open()``, ``receive(_:)`` while ``wantsMore``,
/// then ``end(keep:_:)`` once; it reports how the request ended, its bytes settled.
protocol UploadSink: AnyObject {
    /// Called whenever the sink can take more (the handler reads again if it held).
    var resumeReading: (() -> Void)? { get set }
    /// Called once when storing fails mid-body (a full disk), so that the client hears it at once instead of
    /// sending the rest for nothing; the request still ends through ``end(keep:_:)``.
    var onFailure: ((UploadFailure) -> Void)? { get set }
    var wantsMore: Bool { get }
    func open()
    /// Queues body bytes; `false` (nothing queued) when they would go past the upload's limit.
    func receive(_ buffer: ByteBuffer) -> Bool
    /// The request is over; `completion` runs once on the event loop.
    func end(keep: Bool, _ completion: @escaping (UploadAppender.Ending) -> Void)
}

/// What a sink is made from: the same for every store.
struct UploadSinkSetup {
    /// The upload as the claim found it; its `offset` is where this request's bytes begin.
    var record: UploadRecord
    var table: UploadTable
    var threadPool: NIOThreadPool
    var eventLoop: any EventLoop
    /// The most bytes the upload may hold (its length, or the size limit).
    var limit: Int64?
    /// `false` when nothing may count before the request has ended well (a tus checksum, a plain upload).
    var checkpoints: Bool
    /// Milliseconds an idle upload is kept.
    var expiry: Int64
    /// Succeeded once the upload is free for the next writer.
    var settled: EventLoopPromise<Void>

    /// The request's bytes are settled as `durable`: the upload is free for the next writer, and the handler
    /// hears how the request ended.
    func report(_ durable: UploadRecord, failure: UploadFailure?, to completion: (UploadAppender.Ending) -> Void) {
        table.update(durable, releasing: true)
        settled.succeed()
        completion(failure.map { .failed($0, durable) } ?? .settled(durable))
    }
}
