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
    private struct Append {
        var appender: (any UploadSink)?
        /// Body parts that arrived before the upload was ready to take them.
        var early: [ByteBuffer] = []
        var ended = false
        var failed = false
        var checksum: TusChecksum?
        /// 201 for a creation, 204 for an append.
        var status: HTTPResponseStatus
        var location: String?
    }

    private enum State {
        case idle
        case passing
        case appending(Append)
        /// Answered, or about to be; the rest of the request is dropped.
        case answered(requestEnded: Bool, close: Bool)
    }

    private let settings: Settings
    private var state = State.idle
    private var version = HTTPVersion.http1_1
    private var readHeld = false
    private var inactive = false

    init(settings: Settings) {
        self.settings = settings
    }

    // MARK: Inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        switch (part, state) {
        case (.head(let head), _):
            version = head.version
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
            if let appender = append.appender {
                guard appender.receive(buffer) else {
                    fail(context: context, &append, status: .badRequest)
                    return
                }
            } else {
                append.early.append(buffer)
            }
            state = .appending(append)
        case (.end, .appending(var append)):
            append.ended = true
            state = .appending(append)
            if append.failed {
                endFailed(context: context, append)
            } else if let appender = append.appender {
                let keep = append.checksum?.matches() ?? true
                appender.end(keep: keep) { self.settled(context: context, $0, checksumMatched: keep) }
            }
        case (.end, .answered(_, let close)):
            state = close ? .answered(requestEnded: true, close: true) : .idle
            if close { context.close(promise: nil) }
        case (_, _):
            break
        }
    }

    func read(context: ChannelHandlerContext) {
        if case .appending(let append) = state, !append.failed,
            append.appender.map({ !$0.wantsMore }) ?? !append.early.isEmpty
        {
            readHeld = true
        } else {
            context.read()
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        inactive = true
        abandon()
        context.fireChannelInactive()
    }

    /// The client is gone mid-body: what arrived counts, unless a checksum had to vouch for it.
    private func abandon() {
        guard case .appending(var append) = state, !append.ended, let appender = append.appender else { return }
        append.ended = true
        append.failed = true
        state = .appending(append)
        appender.end(keep: append.checksum == nil) { _ in }
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

    /// The tus upload `id`, once no request is writing to it (one that is, is stopped first).
    private func whenIdle(context: ChannelHandlerContext, id: String, _ next: @escaping (UploadTable.Entry?) -> Void) {
        settings.table.whenIdle(id, on: context.eventLoop) { entry in next(entry?.record.kind == .tus ? entry : nil) }
    }

    private func reportOffset(context: ChannelHandlerContext, head: HTTPRequestHead, id: String) {
        whenIdle(context: context, id: id) { entry in
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
        whenIdle(context: context, id: id) { entry in
            guard let entry, !entry.finished else {
                self.answer(context: context, head: head, status: .notFound, extra: [])
                return
            }
            self.settings.log?("tus upload /\(entry.record.target.joined(separator: "/")) terminated")
            self.drop(id)
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
            components = try destination(head)
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
            metadata: head.headers["upload-metadata"].first, expires: WallClock.millis() + settings.expiry)
        state = .appending(Append(checksum: checksum, status: .created, location: Self.prefix + record.id))
        continueIfAsked(context: context, head: head)
        let store = settings.store
        let promise = context.eventLoop.makePromise(of: Void.self)
        let channel = context.channel
        settings.threadPool.runIfActive(eventLoop: context.eventLoop) { try store.create(record) }
            .assumeIsolated().whenComplete { result in
                switch result {
                case .success:
                    self.settings.table.insert(
                        record, writer: UploadTable.Writer(stop: { channel.close(promise: nil) }, settled: promise.futureResult),
                        holdsSlot: self.settings.admission.slots != nil)
                    self.receive(context: context, record: record, settled: promise)
                case .failure(let error):
                    self.settings.admission.slots?.release()
                    promise.succeed()
                    let failure = UploadFailure(error)
                    self.settings.log?("tus upload \(head.uri) failed: \(failure.reason)")
                    guard case .appending(var append) = self.state else { return }
                    self.fail(context: context, &append, status: HTTPResponseStatus(statusCode: failure.status))
                }
            }
    }

    /// The upload's destination: `filename` below a folder target, else the target itself.
    private func destination(_ head: HTTPRequestHead) throws(TusRefusal) -> [String] {
        let target: [String]
        do {
            target = try SafePath.components(ofTarget: head.uri)
        } catch {
            throw TusRefusal(error == .malformed ? .badRequest : .forbidden)
        }
        var info = stat()
        // On S3 (no root) a folder is named by its final slash alone.
        let path = settings.root.map { SafePath.join($0, target) }
        let isFolder = head.uri.prefix { $0 != "?" }.hasSuffix("/") || (path.map { stat($0, &info) == 0 } == true && info.st_mode & S_IFMT == S_IFDIR)
        guard isFolder else { return target }
        let metadata = TusMetadata.parse(head.headers["upload-metadata"].first)
        guard let name = metadata["filename"] ?? metadata["name"], !name.isEmpty, !name.contains("/"), name != ".."
        else { throw TusRefusal(.badRequest) }
        guard !name.hasPrefix("."), !name.contains("\0") else { throw TusRefusal(.forbidden) }
        return target + [name]
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
        let promise = context.eventLoop.makePromise(of: Void.self)
        let channel = context.channel
        let writer = UploadTable.Writer(stop: { channel.close(promise: nil) }, settled: promise.futureResult)
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
        let appender = settings.store.makeSink(UploadSinkSetup(
            record: record, table: settings.table, threadPool: settings.threadPool,
            eventLoop: context.eventLoop, limit: record.length, checkpoints: append.checksum == nil,
            expiry: settings.expiry, settled: settled))
        appender.resumeReading = { [weak self, weak context] in if let context { self?.resumeReading(context: context) } }
        appender.onFailure = { [weak self, weak context] failure in
            guard let self, let context, case .appending(var append) = self.state, !append.failed, !append.ended else { return }
            self.settings.log?("tus upload failed: \(failure.reason)")
            self.fail(context: context, &append, status: HTTPResponseStatus(statusCode: failure.status))
        }
        appender.open()
        append.appender = appender
        let early = append.early
        append.early = []
        state = .appending(append)
        for buffer in early where !appender.receive(buffer) {
            fail(context: context, &append, status: .badRequest)
            return
        }
        if append.ended {
            let keep = append.checksum?.matches() ?? true
            appender.end(keep: keep) { self.settled(context: context, $0, checksumMatched: keep) }
        } else if inactive {
            abandon()
        }
        resumeReading(context: context)
    }

    private func resumeReading(context: ChannelHandlerContext) {
        guard readHeld else { return }
        readHeld = false
        context.read()
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
        append.early = []
        state = .appending(append)
        append.appender?.end(keep: append.checksum == nil) { _ in }
        write(context: context, status: status, close: true, extra: [], bodyless: false)
        resumeReading(context: context)
        if append.ended { endFailed(context: context, append) }
    }

    /// Refuses a PATCH before its body: answered at once, the body dropped, the connection closed after.
    private func refuse(context: ChannelHandlerContext, status: HTTPResponseStatus, extra: [(String, String)]) {
        guard case .appending(let append) = state else { return }
        state = .answered(requestEnded: append.ended, close: true)
        write(context: context, status: status, close: true, extra: extra, bodyless: false)
        resumeReading(context: context)
        if append.ended { context.close(promise: nil) }
    }

    private func endFailed(context: ChannelHandlerContext, _ append: Append) {
        state = .answered(requestEnded: true, close: true)
        context.close(promise: nil)
    }

    /// Forgets an upload and deletes its files.
    private func drop(_ id: String) {
        settings.table.remove(id)
        let store = settings.store
        settings.threadPool.submit { _ in store.remove(id) }
    }

    // MARK: Answers

    /// `100 Continue` to a client that waits for it (curl does, for a second, before a large body).
    private func continueIfAsked(context: ChannelHandlerContext, head: HTTPRequestHead) {
        guard head.version == .http1_1,
            head.headers["expect"].contains(where: { $0.lowercased() == "100-continue" })
        else { return }
        context.writeAndFlush(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: .continue))), promise: nil)
    }

    /// Answers a request whose head was just read: it has no body we want.
    private func answer(context: ChannelHandlerContext, head: HTTPRequestHead, status: HTTPResponseStatus, extra: [(String, String)]) {
        let hasBody = head.headers["content-length"].first.map { $0 != "0" } ?? !head.headers["transfer-encoding"].isEmpty
        state = .answered(requestEnded: false, close: hasBody)
        write(context: context, status: status, close: hasBody, extra: extra, bodyless: head.method == .HEAD)
    }

    /// Answers the request in progress; with `close`, the connection ends once the request has.
    private func answer(context: ChannelHandlerContext, status: HTTPResponseStatus, close: Bool, extra: [(String, String)]) {
        let ended: Bool
        if case .appending(let append) = state { ended = append.ended } else { ended = false }
        if ended {
            state = close ? .answered(requestEnded: true, close: true) : .idle
        } else {
            state = .answered(requestEnded: false, close: true)
        }
        write(context: context, status: status, close: close || !ended, extra: extra, bodyless: false)
        if ended && close { context.close(promise: nil) }
    }

    private func write(context: ChannelHandlerContext, status: HTTPResponseStatus, close: Bool, extra: [(String, String)], bodyless: Bool) {
        guard context.channel.isActive else { return }
        var headers = HTTPHeaders([("Tus-Resumable", Self.version), ("Date", IMFDate.format(epochSeconds: Int64(time(nil))))])
        headers.add(contentsOf: extra)
        if status != .noContent && !bodyless || status == .ok { headers.add(name: "Content-Length", value: "0") }
        if close { headers.add(name: "Connection", value: "close") }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: version, status: status, headers: headers))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }
}

/// Why a tus creation's target is refused.
struct TusRefusal: Error {
    var status: HTTPResponseStatus
    init(_ status: HTTPResponseStatus) { self.status = status }
}

extension Result {
    fileprivate var isSuccess: Bool {
        if case .success = self { true } else { false }
    }
}

extension TusChecksum {
    fileprivate mutating func update(_ buffer: ByteBuffer) {
        buffer.withUnsafeReadableBytes { update($0) }
    }
}
