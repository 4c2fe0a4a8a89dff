import NIOCore
import NIOPosix

/// The body of an upload request (``UploadHandler``) on its way into the store: parts that arrive before
/// the upload is ready wait here, then go to the store's sink (``UploadSink``); reading pauses while the
/// sink holds enough, and goes on when it asks for more.
/// One per connection, used on its event loop; ``begin()`` at each request.
final class UploadReceiver {
    let store: any UploadBackend
    let table: UploadTable
    let threadPool: NIOThreadPool
    /// Milliseconds an idle upload is kept.
    private let expiry: Int64
    /// The sink of the request's upload, once opened.
    private(set) var sink: (any UploadSink)?
    /// Body parts that arrived before the upload was ready to take them.
    private var early: [ByteBuffer] = []
    private var readHeld = false
    /// The connection has closed: a body under way will not end.
    private(set) var inactive = false

    init(store: any UploadBackend, table: UploadTable, threadPool: NIOThreadPool, expiry: Int64) {
        self.store = store
        self.table = table
        self.threadPool = threadPool
        self.expiry = expiry
    }

    /// A new request: nothing of it received yet.
    func begin() {
        sink = nil
        early = []
    }

    /// A body part: to the sink, or kept until there is one. `false` when the sink refuses it (past the
    /// upload's limit).
    func receive(_ buffer: ByteBuffer) -> Bool {
        guard let sink else {
            early.append(buffer)
            return true
        }
        return sink.receive(buffer)
    }

    /// The handler's `read`: passed on, unless `holding` (a body is being stored) and the body must wait
    /// for the sink, or for one to exist.
    func read(context: ChannelHandlerContext, holding: Bool) {
        if holding, sink.map({ !$0.wantsMore }) ?? !early.isEmpty {
            readHeld = true
        } else {
            context.read()
        }
    }

    /// Reads again, if a read waited.
    func resume(context: ChannelHandlerContext) {
        guard readHeld else { return }
        readHeld = false
        context.read()
    }

    func closed() {
        inactive = true
    }

    /// The parts kept go (the request failed before its upload was ready).
    func discard() {
        early = []
    }

    /// A writer for the upload table: this request, stopped by closing its connection, settled once
    /// the returned promise is.
    func writer(_ context: ChannelHandlerContext) -> (UploadTable.Writer, EventLoopPromise<Void>) {
        let promise = context.eventLoop.makePromise(of: Void.self)
        let channel = context.channel
        return (UploadTable.Writer(stop: { channel.close(promise: nil) }, settled: promise.futureResult), promise)
    }

    /// Makes a new upload durable (on the thread pool), then enters it in the table with this request as
    /// its writer (holding a slot of `slots`); `then` gets the promise to settle once the request's bytes
    /// are, or the failure, the slot given back.
    func create(
        _ record: UploadRecord, slots: UploadSlots?, context: ChannelHandlerContext,
        _ then: @escaping (Result<EventLoopPromise<Void>, UploadFailure>) -> Void
    ) {
        let store = store
        let (writer, promise) = writer(context)
        threadPool.runIfActive(eventLoop: context.eventLoop) { try store.create(record) }.assumeIsolated().whenComplete
        { result in
            switch result {
            case .success:
                self.table.insert(record, writer: writer, holdsSlot: slots != nil)
                then(.success(promise))
            case .failure(let error):
                slots?.release()
                promise.succeed()
                then(.failure(UploadFailure(error)))
            }
        }
    }

    /// Opens the store's sink for `record`, from its offset, and hands it the parts kept so far;
    /// `false` as soon as it refuses one.
    func open(
        _ record: UploadRecord, limit: Int64?, checkpoints: Bool, settled: EventLoopPromise<Void>,
        context: ChannelHandlerContext,
        onFailure: @escaping (UploadFailure) -> Void
    ) -> Bool {
        let sink = store.makeSink(
            UploadSinkSetup(
                record: record, table: table, threadPool: threadPool, eventLoop: context.eventLoop, limit: limit,
                checkpoints: checkpoints, expiry: expiry, settled: settled))
        sink.resumeReading = { [weak self, weak context] in if let context { self?.resume(context: context) } }
        sink.onFailure = onFailure
        sink.open()
        self.sink = sink
        let kept = early
        early = []
        return kept.allSatisfy { sink.receive($0) }
    }

    /// Forgets an upload and deletes what the store holds of it.
    func drop(_ id: String) {
        table.remove(id)
        let store = store
        threadPool.submit { _ in store.remove(id) }
    }

    /// Makes this request — its login's, see ``UploadTable`` — the writer of upload `id`. One still writing (a client
    /// that retried before the server saw its old connection die) is stopped, and its bytes settle, before the claim
    /// is asked again; `next` runs on the event loop, never with `.busy`. Only a `.claimed` upload is held by this
    /// request: give it back with ``release(_:settled:)`` or store into it
    /// (``open(_:limit:checkpoints:settled:context:onFailure:)``); the promise is succeeded once its bytes are.
    func claim(
        _ id: String, context: ChannelHandlerContext,
        _ next: @escaping (UploadTable.Claim, EventLoopPromise<Void>) -> Void
    ) {
        let (writer, promise) = writer(context)
        table.claim(id, owner: LoginGate.user(in: context), writer: writer, on: context.eventLoop) { claim in
            if case .claimed = claim { return next(claim, promise) }
            promise.succeed()
            if case .busy(let current) = claim {
                UploadTable.afterStopping(current, on: context.eventLoop) { self.claim(id, context: context, next) }
            } else {
                next(claim, promise)
            }
        }
    }

    /// Gives a claimed upload back as it was: the request was refused before any byte was stored.
    func release(_ record: UploadRecord, settled: EventLoopPromise<Void>) {
        table.update(record, releasing: true)
        settled.succeed()
    }

    /// The one point where an upload — draft, tus or plain — is complete: the store puts its file in
    /// place (on the thread pool), then the table answers for it as finished until it expires (a
    /// plain upload, which no client can ask about again, is forgotten). `then` runs on the event loop.
    /// Completion hooks belong here.
    func finish(
        _ record: UploadRecord, replacing: Bool, context: ChannelHandlerContext,
        _ then: @escaping (Result<Void, UploadFailure>) -> Void
    ) {
        let store = store
        threadPool.runIfActive(eventLoop: context.eventLoop) { try store.finish(record, replacing: replacing) }
            .assumeIsolated().whenComplete { result in
                switch result {
                case .success:
                    if record.kind == .plain {
                        self.table.remove(record.id)
                    } else {
                        self.table.finish(record)
                    }
                    then(.success(()))
                case .failure(let error):
                    then(.failure(UploadFailure(error)))
                }
            }
    }
}
