import NIOCore
import NIOHTTP1
import NIOPosix

/// Stores uploads: plain PUT/POST, and draft-ietf-httpbis-resumable-upload through ``DraftMachine``,
/// over the durable ``UploadBackend`` (a folder or S3). It sits behind the static-file handler, which has already
/// refused what must not start (paths, limits, no overwrite) and answered `Expect: 100-continue`.
///
/// A creation is durable (record and empty data file) before its `104` names the upload URL. A
/// request that finds another one still appending to its upload (a client that retried before the
/// server noticed the old connection die) stops that one, waits for its bytes to settle, then goes on.
final class DraftHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    struct Settings: Sendable {
        var store: any UploadBackend
        var table: UploadTable
        var threadPool: NIOThreadPool
        var slots: UploadSlots?
        var overwrite: Bool
        var maxUploadSize: Int64?
        /// Milliseconds an idle upload is kept.
        var expiry: Int64
        var log: (@Sendable (String) -> Void)?
    }

    /// The request being handled.
    struct Exchange {
        var head: HTTPRequestHead
        var ended = false
        var answered = false
        /// The connection ends with this request (answered before its body was read, or no keep-alive).
        var closeAfter = false
        var kind = UploadRecord.Kind.plain
        var version = 0
        var created = false
        /// Whether the request carries the upload's last byte.
        var completes = true
        /// Bytes beyond the upload's limit mean an inconsistent length (400), not a size refusal (413).
        var lengthKnown = false
    }

    let settings: Settings
    var exchange: Exchange?
    let receiver: UploadReceiver

    init(settings: Settings) {
        self.settings = settings
        receiver = UploadReceiver(
            store: settings.store, table: settings.table, threadPool: settings.threadPool, expiry: settings.expiry)
    }

    // MARK: Inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            exchange = Exchange(head: head)
            receiver.begin()
            start(context: context, head: head)
        case .body(let buffer):
            guard let current = exchange, !current.answered || receiver.sink != nil else { return }
            if !receiver.receive(buffer) {
                refuseMidBody(context: context, status: current.lengthKnown ? .badRequest : .payloadTooLarge)
            }
        case .end:
            guard var current = exchange else { return }
            current.ended = true
            exchange = current
            if current.answered {
                exchange = nil
                if current.closeAfter { context.close(promise: nil) }
            } else if let sink = receiver.sink {
                sink.end(keep: true) { self.settled(context: context, $0) }
            }
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        read(context: context)
    }

    func read(context: ChannelHandlerContext) {
        receiver.read(context: context, holding: exchange.map { !$0.answered } ?? false)
    }

    func channelInactive(context: ChannelHandlerContext) {
        receiver.closed()
        abandon()
        context.fireChannelInactive()
    }

    /// The client is gone mid-body: a resumable upload keeps what arrived; a plain one is worthless.
    private func abandon() {
        guard let current = exchange, !current.ended, !current.answered, let sink = receiver.sink else { return }
        let kind = current.kind
        let target = current.head.uri
        sink.end(keep: kind != .plain) { ending in
            guard kind == .plain, case .settled(let record) = ending else { return }
            self.settings.log?("upload \(target) abandoned after \(record.offset) bytes")
            self.receiver.drop(record.id)
        }
    }

    // MARK: Requests

    private func start(context: ChannelHandlerContext, head: HTTPRequestHead) {
        switch DraftMachine.classify(method: head.method, target: head.uri, headers: head.headers) {
        case .notDraft:
            if head.method == .PUT || head.method == .POST {
                create(
                    context: context, head: head, kind: .plain, version: 0, complete: true,
                    length: head.headers["content-length"].first.flatMap(DraftMachine.integer))
            } else {
                // OPTIONS never gets here: without the draft's field the tus handler answers it.
                answer(context: context, status: 405, fields: [("Allow", StaticFileHandler.allowed)])
            }
        case .answer(let answer):
            self.answer(context: context, answer)
        case .options(let version):
            var options = DraftMachine.options(version: version, maxSize: settings.maxUploadSize)
            options.fields.append(DraftMachine.Field("Allow", StaticFileHandler.allowed))
            answer(context: context, options)
        case .create(let version, let complete, let length):
            create(context: context, head: head, kind: .ietf, version: version, complete: complete, length: length)
        case .offset(let version, let id):
            reportOffset(context: context, version: version, id: id)
        case .append(let version, let id, let offset, let complete, let length):
            append(context: context, version: version, id: id, offset: offset, complete: complete, length: length)
        case .cancel(let version, let id):
            cancel(context: context, version: version, id: id)
        }
    }

    private func create(
        context: ChannelHandlerContext, head: HTTPRequestHead, kind: UploadRecord.Kind, version: Int, complete: Bool,
        length: Int64?
    ) {
        let target: [String]
        do {
            target = try SafePath.components(ofTarget: head.uri)
        } catch {
            answer(context: context, status: error == .malformed ? 400 : 403, fields: [])
            return
        }
        if let slots = settings.slots, !slots.acquire() {
            settings.log?("upload \(head.uri) refused: \(slots.limit) uploads in progress (--max-uploads)")
            answer(context: context, status: 503, fields: [("Retry-After", "\(UploadAdmission.retryAfterBusy)")])
            return
        }
        let record = UploadRecord(
            id: UploadStore.newID(), kind: kind, interop: kind == .ietf ? version : nil, target: target,
            length: length, user: LoginGate.user(in: context), expires: WallClock.millis() + settings.expiry)
        modify {
            $0.kind = kind; $0.version = version; $0.created = true; $0.completes = complete
        }
        receiver.create(record, slots: settings.slots, context: context) { result in
            switch result {
            case .success(let promise):
                if kind == .ietf && head.version != .http1_0 {
                    let interim = DraftMachine.informational(
                        version: version, id: record.id, maxSize: self.settings.maxUploadSize)
                    self.writeHead(
                        context: context, status: interim.status, fields: interim.fields.map { ($0.name, $0.value) },
                        close: false)
                    context.flush()
                }
                self.receive(context: context, record: record, settled: promise)
            case .failure(let failure):
                self.fail(context: context, failure)
            }
        }
    }

    private func reportOffset(context: ChannelHandlerContext, version: Int, id: String) {
        settings.table.whenIdle(id, owner: LoginGate.user(in: context), on: context.eventLoop) { found in
            let entry: UploadTable.Entry?
            do { entry = try found.get() } catch { return self.fail(context: context, UploadFailure(error)) }
            guard let entry, entry.record.kind == .ietf else {
                return self.answer(context: context, DraftMachine.notFound(version: version))
            }
            self.answer(
                context: context,
                DraftMachine.offset(
                    version: version, record: entry.record, finished: entry.finished,
                    maxSize: self.settings.maxUploadSize))
        }
    }

    private func append(
        context: ChannelHandlerContext, version: Int, id: String, offset: Int64, complete: Bool, length: Int64?
    ) {
        let contentLength = exchange?.head.headers["content-length"].first.flatMap(DraftMachine.integer)
        receiver.claim(id, context: context) { claimed in
            switch claimed {
            case .missing:
                self.answer(context: context, DraftMachine.notFound(version: version))
            case .unavailable(let failure):
                self.fail(context: context, failure)
            case .finished(let record):
                self.answer(
                    context: context,
                    DraftMachine.admit(
                        version: version, offset: offset, length: length, contentLength: contentLength, record: record,
                        finished: true)
                        ?? DraftMachine.conflict(version: version, record: record, finished: true))
            case .claimed(var record, let settled):
                let refusal =
                    record.kind != .ietf
                    ? DraftMachine.notFound(version: version)
                    : DraftMachine.admit(
                        version: version, offset: offset, length: length, contentLength: contentLength, record: record,
                        finished: false)
                if let refusal {
                    self.receiver.release(record, settled: settled)
                    self.answer(context: context, refusal)
                    return
                }
                record.length = record.length ?? length
                self.modify {
                    $0.kind = .ietf; $0.version = version; $0.completes = complete
                }
                self.receive(context: context, record: record, settled: settled)
            }
        }
    }

    private func cancel(context: ChannelHandlerContext, version: Int, id: String) {
        settings.table.whenIdle(id, owner: LoginGate.user(in: context), on: context.eventLoop) { found in
            let entry: UploadTable.Entry?
            do { entry = try found.get() } catch { return self.fail(context: context, UploadFailure(error)) }
            guard let entry, entry.record.kind == .ietf else {
                return self.answer(context: context, DraftMachine.notFound(version: version))
            }
            self.settings.log?("upload /\(entry.record.target.joined(separator: "/")) cancelled")
            self.receiver.drop(id)
            self.answer(context: context, DraftMachine.cancelled(version: version))
        }
    }

    // MARK: Bodies

    /// Starts storing the body into `record`'s data, from its offset.
    private func receive(context: ChannelHandlerContext, record: UploadRecord, settled: EventLoopPromise<Void>) {
        guard var current = exchange else {
            receiver.release(record, settled: settled)
            return
        }
        current.lengthKnown = record.length != nil
        exchange = current
        let opened = receiver.open(
            record, limit: record.length ?? settings.maxUploadSize.map { max($0, record.offset) },
            checkpoints: current.kind != .plain,
            settled: settled, context: context
        ) { [weak self, weak context] failure in if let context { self?.failMidBody(context: context, failure) } }
        guard opened else {
            refuseMidBody(context: context, status: record.length == nil ? .payloadTooLarge : .badRequest)
            return
        }
        if current.ended {
            receiver.sink?.end(keep: true) { self.settled(context: context, $0) }
        } else if receiver.inactive {
            abandon()
        }
        receiver.resume(context: context)
    }

    /// The request's bytes are durable: finish the upload, or say how far it got.
    private func settled(context: ChannelHandlerContext, _ ending: UploadAppender.Ending) {
        guard let current = exchange, !current.answered else { return }
        switch ending {
        case .failed(let failure, let record):
            if current.kind == .plain { receiver.drop(record.id) }
            fail(context: context, failure)
        case .settled(var record):
            if current.completes && record.length == nil { record.length = record.offset }
            guard current.completes, record.isComplete else {
                if current.kind == .plain {
                    receiver.drop(record.id)
                    answer(context: context, status: 400, fields: [])
                } else {
                    answer(
                        context: context,
                        DraftMachine.progress(
                            version: current.version, record: record, created: current.created,
                            maxSize: settings.maxUploadSize))
                }
                return
            }
            finish(context: context, record: record)
        }
    }

    private func finish(context: ChannelHandlerContext, record: UploadRecord) {
        guard let current = exchange else { return }
        receiver.finish(record, replacing: settings.overwrite, context: context) { result in
            switch result {
            case .success:
                if current.kind == .plain {
                    self.answer(context: context, status: 201, fields: [])
                } else {
                    self.answer(
                        context: context,
                        DraftMachine.done(version: current.version, record: record, created: current.created))
                }
            case .failure(let failure):
                if current.kind == .plain { self.receiver.drop(record.id) }
                self.fail(context: context, failure)
            }
        }
    }

    private func modify(_ change: (inout Exchange) -> Void) {
        guard var current = exchange else { return }
        change(&current)
        exchange = current
    }
}
