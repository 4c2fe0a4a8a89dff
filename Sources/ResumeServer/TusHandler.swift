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
        var root: String
        var uploads: TusUploads
        var admission: UploadAdmission
        var threadPool: NIOThreadPool
        var temporaryFiles: TemporaryFiles
        /// How long an upload is kept after its last PATCH.
        var expiry: Duration
        var log: (@Sendable (String) -> Void)?
    }

    static let version = "1.0.0"
    static let extensions = "creation,creation-with-upload,termination,expiration,checksum"

    /// A body being written: a PATCH, or a POST with its first bytes.
    private struct Append {
        var id: String?
        var file: UploadFile?
        var length: Int64
        var start: Int64
        var written: Int64 = 0
        var queue: [ByteBuffer] = []
        var queued = 0
        var writing = false
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
    private static let highWater = 4 << 20

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
                sweepExpired(context: context)
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
            if append.start + append.written + Int64(append.queued + buffer.readableBytes) > append.length {
                fail(context: context, &append, status: .badRequest)
                return
            }
            append.checksum?.update(buffer)
            append.queue.append(buffer)
            append.queued += buffer.readableBytes
            state = .appending(append)
            writeQueued(context: context)
        case (.end, .appending(var append)):
            append.ended = true
            state = .appending(append)
            if append.failed {
                if !append.writing { conclude(context: context, append) }
            } else {
                writeQueued(context: context)
            }
        case (.end, .answered(_, let close)):
            state = close ? .answered(requestEnded: true, close: true) : .idle
            if close { context.close(promise: nil) }
        case (_, _):
            break
        }
    }

    func read(context: ChannelHandlerContext) {
        if case .appending(let append) = state, append.queued >= Self.highWater {
            readHeld = true
        } else {
            context.read()
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if case .appending(var append) = state, !(append.failed && append.ended) {
            // The client is gone: what was written counts (unless a checksum had to vouch for it).
            append.ended = true
            append.failed = true
            append.queue.removeAll()
            append.queued = 0
            state = .appending(append)
            if !append.writing { conclude(context: context, append) }
        }
        context.fireChannelInactive()
    }

    private func claims(_ head: HTTPRequestHead) -> Bool {
        if head.uri.hasPrefix(TusUploads.prefix) { return true }
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
        let id = String(head.uri.dropFirst(TusUploads.prefix.count).prefix { $0 != "?" && $0 != "/" })
        switch head.method {
        case .POST where !head.uri.hasPrefix(TusUploads.prefix):
            create(context: context, head: head)
        case .HEAD:
            guard let upload = settings.uploads.get(id) else {
                answer(context: context, head: head, status: .notFound, extra: [("Cache-Control", "no-store")])
                return
            }
            answer(context: context, head: head, status: .ok, extra: [
                ("Upload-Offset", "\(upload.offset)"), ("Upload-Length", "\(upload.length)"),
                ("Upload-Expires", IMFDate.format(epochSeconds: upload.expiresEpoch)), ("Cache-Control", "no-store"),
            ])
        case .PATCH:
            append(context: context, head: head, id: id)
        case .DELETE:
            guard let upload = settings.uploads.get(id), !upload.busy, settings.uploads.remove(id) != nil else {
                answer(context: context, head: head, status: .notFound, extra: [])
                return
            }
            discard(upload.file)
            settings.admission.slots?.release()
            answer(context: context, head: head, status: .noContent, extra: [])
        default:
            answer(context: context, head: head, status: .methodNotAllowed, extra: [("Allow", "OPTIONS, POST, HEAD, PATCH, DELETE")])
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
        state = .appending(Append(length: length, start: 0, checksum: checksum, status: .created))
        continueIfAsked(context: context, head: head)
        let root = settings.root
        let temporaryFiles = settings.temporaryFiles
        settings.threadPool.runIfActive(eventLoop: context.eventLoop) {
            let file = try UploadFile.create(components, root: root)
            temporaryFiles.register(path: file.temporaryPath, descriptor: file.descriptor)
            return file
        }.assumeIsolated().whenComplete { result in
            guard case .appending(var append) = self.state else { return }
            switch result {
            case .success(let file):
                let (expires, epoch) = self.expiry()
                let id = self.settings.uploads.insert(
                    TusUpload(file: file, length: length, offset: 0, expires: expires, expiresEpoch: epoch, busy: true))
                append.id = id
                append.file = file
                append.location = TusUploads.prefix + id
                self.state = .appending(append)
                if append.failed {
                    if append.ended { self.conclude(context: context, append) }
                } else {
                    self.writeQueued(context: context)
                }
            case .failure(let error):
                self.settings.admission.slots?.release()
                let failure = UploadFailure(error)
                self.settings.log?("tus upload \(head.uri) failed: \(failure.reason)")
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
        let path = SafePath.join(settings.root, target)
        let isFolder = head.uri.prefix { $0 != "?" }.hasSuffix("/") || (stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR)
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
        let (upload, current) = settings.uploads.beginAppend(id, at: offset)
        guard let upload else {
            if let current {
                answer(context: context, head: head, status: .conflict, extra: [("Upload-Offset", "\(current)")])
            } else {
                answer(context: context, head: head, status: .notFound, extra: [])
            }
            return
        }
        state = .appending(Append(id: id, file: upload.file, length: upload.length, start: offset, checksum: checksum, status: .noContent))
        continueIfAsked(context: context, head: head)
    }

    // MARK: Writing

    private func writeQueued(context: ChannelHandlerContext) {
        guard case .appending(var append) = state, !append.writing, let file = append.file else { return }
        if append.queue.isEmpty {
            if append.ended && !append.failed { finish(context: context, append) }
            return
        }
        let batch = append.queue
        let bytes = append.queued
        let offset = append.start + append.written
        append.queue.removeAll(keepingCapacity: true)
        append.writing = true
        state = .appending(append)
        settings.threadPool.runIfActive(eventLoop: context.eventLoop) {
            try file.write(batch, at: offset)
        }.assumeIsolated().whenComplete { result in
            guard case .appending(var append) = self.state else { return }
            append.writing = false
            append.queued = max(0, append.queued - bytes)
            append.written += result.isSuccess ? Int64(bytes) : 0
            if case .failure(let error) = result, !append.failed {
                self.fail(context: context, &append, status: HTTPResponseStatus(statusCode: UploadFailure(error).status))
                return
            }
            self.state = .appending(append)
            if append.failed {
                if append.ended { self.conclude(context: context, append) }
                return
            }
            if self.readHeld && append.queued < Self.highWater {
                self.readHeld = false
                context.read()
            }
            self.writeQueued(context: context)
        }
    }

    private func finish(context: ChannelHandlerContext, _ append: Append) {
        guard let id = append.id, let file = append.file else { return }
        if let checksum = append.checksum, !checksum.matches() {
            settle(append, keep: false)
            answer(context: context, status: HTTPResponseStatus(statusCode: 460, reasonPhrase: "Checksum Mismatch"), close: false, extra: [])
            return
        }
        let offset = append.start + append.written
        var extra = [("Upload-Offset", "\(offset)")]
        if let location = append.location { extra.append(("Location", location)) }
        guard offset == append.length else {
            let (expires, epoch) = settle(append, keep: true)
            _ = expires
            extra.append(("Upload-Expires", IMFDate.format(epochSeconds: epoch)))
            answer(context: context, status: append.status, close: false, extra: extra)
            return
        }
        let replacing = settings.admission.overwrite
        let temporaryFiles = settings.temporaryFiles
        settings.threadPool.runIfActive(eventLoop: context.eventLoop) {
            guard temporaryFiles.unregister(path: file.temporaryPath) else {
                throw UploadFailure(status: 503, "server shutting down")
            }
            try file.commit(replacing: replacing)
        }.assumeIsolated().whenComplete { result in
            self.settings.uploads.remove(id)
            self.settings.admission.slots?.release()
            switch result {
            case .success:
                self.answer(context: context, status: append.status, close: false, extra: extra)
            case .failure(let error):
                let failure = UploadFailure(error)
                self.settings.log?("tus upload \(file.finalPath) failed: \(failure.reason)")
                self.answer(context: context, status: HTTPResponseStatus(statusCode: failure.status), close: false, extra: [])
            }
        }
    }

    /// Answers an append that cannot go on; the rest of its body is dropped, and once it has ended
    /// (and no write is running) the upload is settled and the connection closed.
    private func fail(context: ChannelHandlerContext, _ append: inout Append, status: HTTPResponseStatus) {
        append.failed = true
        append.queue.removeAll()
        append.queued = 0
        append.checksum = nil
        state = .appending(append)
        write(context: context, status: status, close: true, extra: [], bodyless: false)
        if readHeld {
            readHeld = false
            context.read()
        }
        if append.ended && !append.writing { conclude(context: context, append) }
    }

    /// Ends a failed append: its written bytes count (unless a checksum had to vouch for them).
    private func conclude(context: ChannelHandlerContext, _ append: Append) {
        settle(append, keep: append.checksum == nil)
        state = .answered(requestEnded: true, close: true)
        context.close(promise: nil)
    }

    /// Records where an append ended: the bytes written count when `keep`, else the offset stays.
    @discardableResult
    private func settle(_ append: Append, keep: Bool) -> (ContinuousClock.Instant, Int64) {
        let (expires, epoch) = expiry()
        if let id = append.id {
            settings.uploads.endAppend(id, offset: keep ? append.start + append.written : append.start, expires: expires, expiresEpoch: epoch)
        }
        return (expires, epoch)
    }

    private func expiry() -> (ContinuousClock.Instant, Int64) {
        (ContinuousClock.now + settings.expiry, Int64(time(nil)) + settings.expiry.components.seconds)
    }

    private func sweepExpired(context: ChannelHandlerContext) {
        for upload in settings.uploads.takeExpired() {
            discard(upload.file)
            settings.admission.slots?.release()
        }
    }

    private func discard(_ file: UploadFile) {
        let temporaryFiles = settings.temporaryFiles
        settings.threadPool.submit { state in
            guard state == .active, temporaryFiles.unregister(path: file.temporaryPath) else { return }
            file.discard()
        }
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
