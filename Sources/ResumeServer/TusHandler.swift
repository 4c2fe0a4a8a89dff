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

/// The server side of tus 1.0.0: core, creation, creation-with-upload, termination, expiration and
/// checksum (sha1, sha256), beside the IETF draft that NIO handles behind this handler.
///
/// A `POST` with `Tus-Resumable` to a folder creates an upload whose file lands in that folder
/// under its `filename` metadata; to any other path, at that path. The same rules as every upload
/// apply: `SafePath`, no overwrite without `--overwrite`, the size and slot limits. The upload's
/// bytes go to a temporary file beside the destination, renamed into place once complete.
/// Requests that are not tus pass through untouched.
final class TusHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    struct Settings: Sendable {
        /// The served folder; `nil` on S3.
        var root: String?
        var store: any UploadBackend
        var table: UploadTable
        var admission: UploadAdmission
        var threadPool: NIOThreadPool
        /// Milliseconds an upload is kept after its last PATCH.
        var expiry: Int64
        var log: (@Sendable (String) -> Void)?
    }

    static let version = "1.0.0"
    static let extensions = "creation,creation-with-upload,termination,expiration,checksum"
    /// Where upload URLs live; below it every path is an upload id.
    static let prefix = "/tus_upload/"

    /// A body being stored: a PATCH, or a POST with its first bytes.
    struct Append {
        var ended = false
        var failed = false
        var checksum: TusChecksum?
        /// 201 for a creation, 204 for an append.
        var status: HTTPResponseStatus
        var location: String?
    }

    enum State {
        case idle
        case passing
        case appending(Append)
        /// Answered, or about to be; the rest of the request is dropped.
        case answered(requestEnded: Bool, close: Bool)
    }

    let settings: Settings
    var state = State.idle
    var version = HTTPVersion.http1_1
    let receiver: UploadReceiver

    init(settings: Settings) {
        self.settings = settings
        receiver = UploadReceiver(store: settings.store, table: settings.table, threadPool: settings.threadPool, expiry: settings.expiry)
    }

    // MARK: Inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        switch (part, state) {
        case (.head(let head), _):
            version = head.version
            receiver.begin()
            if claims(head) {
                handle(context: context, head: head)
            } else {
                state = .passing
                context.fireChannelRead(data)
            }
        case (_, .passing):
            if case .end = part { state = .idle }
            context.fireChannelRead(data)
        case (.body(let buffer), .appending(var append)):
            guard !append.failed else { return }
            append.checksum?.update(buffer)
            state = .appending(append)
            if !receiver.receive(buffer) { fail(context: context, &append, status: .badRequest) }
        case (.end, .appending(var append)):
            append.ended = true
            state = .appending(append)
            if append.failed {
                endFailed(context: context, append)
            } else if let sink = receiver.sink {
                let keep = append.checksum?.matches() ?? true
                sink.end(keep: keep) { self.settled(context: context, $0, checksumMatched: keep) }
            }
        case (.end, .answered(_, let close)):
            state = close ? .answered(requestEnded: true, close: true) : .idle
            if close { context.close(promise: nil) }
        case (_, _):
            break
        }
    }

    func read(context: ChannelHandlerContext) {
        if case .appending(let append) = state {
            receiver.read(context: context, holding: !append.failed)
        } else {
            context.read()
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        receiver.closed()
        abandon()
        context.fireChannelInactive()
    }

    /// The client is gone mid-body: what arrived counts, unless a checksum had to vouch for it.
    private func abandon() {
        guard case .appending(var append) = state, !append.ended, let sink = receiver.sink else { return }
        append.ended = true
        append.failed = true
        state = .appending(append)
        sink.end(keep: append.checksum == nil) { _ in }
    }

    private func claims(_ head: HTTPRequestHead) -> Bool {
        if head.uri.hasPrefix(Self.prefix) { return true }
        if head.method == .OPTIONS { return head.headers["upload-draft-interop-version"].isEmpty }
        return head.method == .POST && !head.headers["tus-resumable"].isEmpty
    }

    // MARK: Requests

    private func handle(context: ChannelHandlerContext, head: HTTPRequestHead) {
        if head.method == .OPTIONS {
            var extra = [
                ("Tus-Version", Self.version), ("Tus-Extension", Self.extensions),
                ("Tus-Checksum-Algorithm", TusChecksum.algorithms),
            ]
            if let limit = settings.admission.maxUploadSize { extra.append(("Tus-Max-Size", "\(limit)")) }
            answer(context: context, head: head, status: .noContent, extra: extra)
            return
        }
        guard head.headers["tus-resumable"].first == Self.version else {
            answer(context: context, head: head, status: .preconditionFailed, extra: [("Tus-Version", Self.version)])
            return
        }
        let id = String(head.uri.dropFirst(Self.prefix.count).prefix { $0 != "?" && $0 != "/" })
        switch head.method {
        case .POST where !head.uri.hasPrefix(Self.prefix):
            create(context: context, head: head)
        case .HEAD:
            reportOffset(context: context, head: head, id: id)
        case .PATCH:
            append(context: context, head: head, id: id)
        case .DELETE:
            terminate(context: context, head: head, id: id)
        default:
            answer(context: context, head: head, status: .methodNotAllowed, extra: [("Allow", "OPTIONS, POST, HEAD, PATCH, DELETE")])
        }
    }

    /// The tus upload `id`, once no request is writing to it (one that is, is stopped first); when the
    /// store cannot be read, the request is answered here (503).
    private func whenIdle(context: ChannelHandlerContext, head: HTTPRequestHead, id: String, _ next: @escaping (UploadTable.Entry?) -> Void) {
        settings.table.whenIdle(id, on: context.eventLoop) { found in
            switch found {
            case .success(let entry): next(entry?.record.kind == .tus ? entry : nil)
            case .failure(let failure): self.unavailable(context: context, head: head, failure)
            }
        }
    }

    private func reportOffset(context: ChannelHandlerContext, head: HTTPRequestHead, id: String) {
        whenIdle(context: context, head: head, id: id) { entry in
            guard let entry, !entry.finished, let length = entry.record.length else {
                self.answer(context: context, head: head, status: .notFound, extra: [("Cache-Control", "no-store")])
                return
            }
            self.answer(context: context, head: head, status: .ok, extra: [
                ("Upload-Offset", "\(entry.record.offset)"), ("Upload-Length", "\(length)"),
                ("Upload-Expires", IMFDate.format(epochSeconds: entry.record.expires / 1000)), ("Cache-Control", "no-store"),
            ])
        }
    }

    private func terminate(context: ChannelHandlerContext, head: HTTPRequestHead, id: String) {
        whenIdle(context: context, head: head, id: id) { entry in
            guard let entry, !entry.finished else {
                self.answer(context: context, head: head, status: .notFound, extra: [])
                return
            }
            self.settings.log?("tus upload /\(entry.record.target.joined(separator: "/")) terminated")
            self.receiver.drop(id)
            self.answer(context: context, head: head, status: .noContent, extra: [])
        }
    }

    private func create(context: ChannelHandlerContext, head: HTTPRequestHead) {
        guard let length = UploadAdmission.integer(head.headers["upload-length"].first) else {
            // Deferred lengths (creation-defer-length) are not offered.
            answer(context: context, head: head, status: .badRequest, extra: [])
            return
        }
        let components: [String]
        do {
            components = try TusTarget.components(head, root: settings.root)
        } catch {
            answer(context: context, head: head, status: error.status, extra: [])
            return
        }
        if let refusal = settings.admission.check(head, components: components) {
            settings.log?("tus upload \(head.uri) refused: \(refusal.reason)")
            answer(context: context, head: head, status: refusal.status, extra: refusal.headers)
            return
        }
        let hasBody = head.headers["content-type"].first?.lowercased() == "application/offset+octet-stream"
        var checksum: TusChecksum?
        if hasBody, let header = head.headers["upload-checksum"].first {
            guard let parsed = TusChecksum(header: header) else {
                answer(context: context, head: head, status: .badRequest, extra: [])
                return
            }
            checksum = parsed
        }
        if let slots = settings.admission.slots, !slots.acquire() {
            answer(context: context, head: head, status: .serviceUnavailable, extra: [("Retry-After", "\(UploadAdmission.retryAfterBusy)")])
            return
        }
        let record = UploadRecord(
            id: UploadStore.newID(), kind: .tus, target: components, length: length,
            metadata: head.headers["upload-metadata"].first, user: LoginGate.user(in: context), expires: WallClock.millis() + settings.expiry)
        state = .appending(Append(checksum: checksum, status: .created, location: Self.prefix + record.id))
        continueIfAsked(context: context, head: head)
        receiver.create(record, slots: settings.admission.slots, context: context) { result in
            switch result {
            case .success(let promise):
                self.receive(context: context, record: record, settled: promise)
            case .failure(let failure):
                self.settings.log?("tus upload \(head.uri) failed: \(failure.reason)")
                guard case .appending(var append) = self.state else { return }
                self.fail(context: context, &append, status: HTTPResponseStatus(statusCode: failure.status))
            }
        }
    }

    private func append(context: ChannelHandlerContext, head: HTTPRequestHead, id: String) {
        guard head.headers["content-type"].first?.lowercased() == "application/offset+octet-stream" else {
            answer(context: context, head: head, status: .unsupportedMediaType, extra: [])
            return
        }
        guard let offset = UploadAdmission.integer(head.headers["upload-offset"].first) else {
            answer(context: context, head: head, status: .badRequest, extra: [])
            return
        }
        var checksum: TusChecksum?
        if let header = head.headers["upload-checksum"].first {
            guard let parsed = TusChecksum(header: header) else {
                answer(context: context, head: head, status: .badRequest, extra: [])
                return
            }
            checksum = parsed
        }
        state = .appending(Append(checksum: checksum, status: .noContent))
        continueIfAsked(context: context, head: head)
        claim(context: context, head: head, id: id, offset: offset)
    }

    /// Makes this PATCH the upload's writer: a request still writing is stopped first (a client that
    /// retried before the server saw its old connection die), then the offsets must agree.
    private func claim(context: ChannelHandlerContext, head: HTTPRequestHead, id: String, offset: Int64) {
        let (writer, promise) = receiver.writer(context)
        settings.table.claim(id, writer: writer, on: context.eventLoop) { claim in
            self.claimed(claim, context: context, head: head, id: id, offset: offset, promise: promise)
        }
    }

    private func claimed(
        _ claim: UploadTable.Claim, context: ChannelHandlerContext, head: HTTPRequestHead, id: String, offset: Int64,
        promise: EventLoopPromise<Void>
    ) {
        switch claim {
        case .busy(let current):
            promise.succeed()
            UploadTable.afterStopping(current, on: context.eventLoop) { self.claim(context: context, head: head, id: id, offset: offset) }
        case .missing, .finished:
            promise.succeed()
            refuse(context: context, status: .notFound, extra: [])
        case .unavailable(let failure):
            promise.succeed()
            unavailable(context: context, head: nil, failure)
        case .claimed(let record):
            guard record.kind == .tus, record.offset == offset else {
                settings.table.update(record, releasing: true)
                promise.succeed()
                refuse(context: context, status: record.kind == .tus ? .conflict : .notFound,
                       extra: record.kind == .tus ? [("Upload-Offset", "\(record.offset)")] : [])
                return
            }
            receive(context: context, record: record, settled: promise)
        }
    }

    // MARK: Storing

    private func receive(context: ChannelHandlerContext, record: UploadRecord, settled: EventLoopPromise<Void>) {
        guard case .appending(var append) = state else {
            settings.table.update(record, releasing: true)
            settled.succeed()
            return
        }
        let opened = receiver.open(record, limit: record.length, checkpoints: append.checksum == nil, settled: settled, context: context) {
            [weak self, weak context] failure in
            guard let self, let context, case .appending(var append) = self.state, !append.failed, !append.ended else { return }
            self.settings.log?("tus upload failed: \(failure.reason)")
            self.fail(context: context, &append, status: HTTPResponseStatus(statusCode: failure.status))
        }
        guard opened else {
            fail(context: context, &append, status: .badRequest)
            return
        }
        if append.ended {
            let keep = append.checksum?.matches() ?? true
            receiver.sink?.end(keep: keep) { self.settled(context: context, $0, checksumMatched: keep) }
        } else if receiver.inactive {
            abandon()
        }
        receiver.resume(context: context)
    }

    private func settled(context: ChannelHandlerContext, _ ending: UploadAppender.Ending, checksumMatched: Bool) {
        guard case .appending(let append) = state, !append.failed else { return }
        switch ending {
        case .failed(let failure, _):
            settings.log?("tus upload failed: \(failure.reason)")
            answer(context: context, status: HTTPResponseStatus(statusCode: failure.status), close: false, extra: [])
        case .settled(let record):
            guard checksumMatched else {
                answer(context: context, status: HTTPResponseStatus(statusCode: 460, reasonPhrase: "Checksum Mismatch"), close: false, extra: [])
                return
            }
            var extra = [("Upload-Offset", "\(record.offset)")]
            if let location = append.location { extra.append(("Location", location)) }
            guard record.isComplete else {
                extra.append(("Upload-Expires", IMFDate.format(epochSeconds: record.expires / 1000)))
                answer(context: context, status: append.status, close: false, extra: extra)
                return
            }
            let store = settings.store
            let replacing = settings.admission.overwrite
            settings.threadPool.runIfActive(eventLoop: context.eventLoop) { try store.finish(record, replacing: replacing) }
                .assumeIsolated().whenComplete { result in
                    switch result {
                    case .success:
                        self.settings.table.finish(record)
                        self.answer(context: context, status: append.status, close: false, extra: extra)
                    case .failure(let error):
                        let failure = UploadFailure(error)
                        self.settings.log?("tus upload /\(record.target.joined(separator: "/")) failed: \(failure.reason)")
                        self.answer(context: context, status: HTTPResponseStatus(statusCode: failure.status), close: false, extra: [])
                    }
                }
        }
    }

    /// Answers an append that cannot go on; the rest of its body is dropped, and once it has ended the
    /// connection closes. What was stored counts (unless a checksum had to vouch for it).
    private func fail(context: ChannelHandlerContext, _ append: inout Append, status: HTTPResponseStatus) {
        append.failed = true
        receiver.discard()
        state = .appending(append)
        receiver.sink?.end(keep: append.checksum == nil) { _ in }
        write(context: context, status: status, close: true, extra: [], bodyless: false)
        receiver.resume(context: context)
        if append.ended { endFailed(context: context, append) }
    }

    private func endFailed(context: ChannelHandlerContext, _ append: Append) {
        state = .answered(requestEnded: true, close: true)
        context.close(promise: nil)
    }
}
