import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOPosix

/// The application side of one logical request behind NIO's resumable-upload handler: stores a
/// PUT or POST body below the served folder and answers OPTIONS; anything else gets 405.
///
/// NIO creates a fresh child channel, and so a fresh sink, for every logical upload; for a draft
/// upload that one sink sees the bytes of the creation request and of every later PATCH as one
/// request. Writes go to the thread pool, and the sink reads from the network only while fewer
/// than `highWater` bytes wait for the disk, so memory stays flat whatever the upload's size.
final class UploadSink: ChannelInboundHandler {
    typealias InboundIn = HTTPRequestPart
    typealias OutboundOut = HTTPResponsePart

    struct Settings: Sendable {
        var root: String
        var threadPool: NIOThreadPool
        var temporaryFiles: TemporaryFiles
        var expiredUploads: ExpiredUploads
        var log: (@Sendable (String) -> Void)?
        var overwrite: Bool = false
        var maxUploadSize: Int64? = nil
        var slots: UploadSlots? = nil
    }

    private enum State {
        case idle
        /// Body bytes are arriving (over one or more connections).
        case receiving
        /// The last byte has arrived; queued data is being written, then committed.
        case finishing
        /// Already answered (an error, or not an upload): the rest of the request is ignored.
        case ignoring
        /// Answered after a commit, or abandoned and cleaned up.
        case done
    }

    private static let highWater = 4 << 20

    private let settings: Settings
    /// `/resumable_upload/<token>` for a draft upload; `nil` for a plain request.
    private let resumptionPath: String?
    private var state = State.idle
    private var target = ""
    private var file: UploadFile?
    private var queue: [ByteBuffer] = []
    /// Received but not yet written, including the batch being written.
    private var pendingBytes = 0
    private var written: Int64 = 0
    private var busy = false
    private var readDeferred = false
    private var abandoned = false
    private var holdsSlot = false
    private var lastError: Error?

    init(settings: Settings, resumptionPath: String?) {
        self.settings = settings
        self.resumptionPath = resumptionPath
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let request):
            guard case .idle = state else { return }
            target = request.path ?? "/"
            switch request.method {
            case .put, .post:
                begin(context: context)
            case .options:
                state = .ignoring
                respond(context: context, status: .ok, fields: [HTTPField(name: Self.allow, value: StaticFileHandler.allowed)])
            default:
                state = .ignoring
                respond(context: context, status: .methodNotAllowed, fields: [HTTPField(name: Self.allow, value: StaticFileHandler.allowed)])
            }
        case .body(let buffer):
            guard case .receiving = state else { return }
            if let limit = settings.maxUploadSize, written + Int64(pendingBytes + buffer.readableBytes) > limit {
                // A chunked body announced no length: it is cut off here, and nothing is kept.
                fail(context: context, UploadFailure(status: 413, "more than --max-upload-size \(limit) bytes"))
                return
            }
            queue.append(buffer)
            pendingBytes += buffer.readableBytes
            writeQueued(context: context)
        case .end:
            guard case .receiving = state else { return }
            state = .finishing
            writeQueued(context: context)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        // Reads are ours to drive (auto-read is off), also when the body is not stored.
        if case .receiving = state, pendingBytes >= Self.highWater {
            readDeferred = true
        } else {
            context.read()
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        // NIO reports why it gave the upload up (timeout, cancellation, conflict) just before
        // the channel goes inactive.
        lastError = error
    }

    func channelInactive(context: ChannelHandlerContext) {
        switch state {
        case .receiving, .idle:
            // Never completed: the bytes so far are worthless to anyone.
            state = .done
            releaseSlot()
            settings.log?("upload \(target) abandoned after \(written + Int64(pendingBytes)) bytes"
                + (lastError.map { " (\($0))" } ?? ""))
            dropFile()
            if let resumptionPath { settings.expiredUploads.insert(resumptionPath) }
        case .finishing, .ignoring, .done:
            // A finished upload is still committed even if nobody is left to hear about it.
            break
        }
        context.fireChannelInactive()
    }

    // MARK: Storing

    private func begin(context: ChannelHandlerContext) {
        let components: [String]
        do {
            components = try SafePath.components(ofTarget: target)
        } catch {
            fail(context: context, UploadFailure(error))
            return
        }
        if let slots = settings.slots {
            guard slots.acquire() else {
                fail(context: context, UploadFailure(status: 503, "\(slots.limit) uploads in progress (--max-uploads)"))
                return
            }
            holdsSlot = true
        }
        state = .receiving
        // The sink paces the network itself (see `channelReadComplete`).
        try? context.channel.syncOptions?.setOption(ChannelOptions.autoRead, value: false)
        busy = true
        let root = settings.root
        let temporaryFiles = settings.temporaryFiles
        settings.threadPool.runIfActive(eventLoop: context.eventLoop) {
            let file = try UploadFile.create(components, root: root)
            temporaryFiles.register(path: file.temporaryPath, descriptor: file.descriptor)
            return file
        }.assumeIsolated().whenComplete { result in
            self.busy = false
            switch result {
            case .success(let file):
                self.file = file
                if self.abandoned {
                    self.discardFile()
                } else {
                    self.writeQueued(context: context)
                }
            case .failure(let error):
                self.fail(context: context, UploadFailure(error))
            }
        }
    }

    /// Starts the next write, or the commit once everything is written; one thing at a time.
    private func writeQueued(context: ChannelHandlerContext) {
        guard !busy, let file, !abandoned else { return }
        if queue.isEmpty {
            if case .finishing = state { commit(context: context, file: file) }
            return
        }
        let batch = queue
        let batchBytes = batch.reduce(0) { $0 + $1.readableBytes }
        let offset = written
        queue.removeAll(keepingCapacity: true)
        busy = true
        settings.threadPool.runIfActive(eventLoop: context.eventLoop) {
            try file.write(batch, at: offset)
        }.assumeIsolated().whenComplete { result in
            self.busy = false
            self.written += Int64(batchBytes)
            self.pendingBytes -= batchBytes
            if self.abandoned {
                self.discardFile()
                return
            }
            if case .failure(let error) = result {
                self.fail(context: context, UploadFailure(error))
                return
            }
            if self.readDeferred && self.pendingBytes < Self.highWater {
                self.readDeferred = false
                context.read()
            }
            self.writeQueued(context: context)
        }
    }

    private func commit(context: ChannelHandlerContext, file: UploadFile) {
        busy = true
        let temporaryFiles = settings.temporaryFiles
        let replacing = settings.overwrite
        settings.threadPool.runIfActive(eventLoop: context.eventLoop) {
            // Unregistered first: from here on the shutdown sweep must not touch the descriptor.
            guard temporaryFiles.unregister(path: file.temporaryPath) else {
                throw UploadFailure(status: 503, "server shutting down")
            }
            try file.commit(replacing: replacing)
        }.assumeIsolated().whenComplete { result in
            self.busy = false
            self.file = nil
            switch result {
            case .success:
                self.state = .done
                self.releaseSlot()
                self.respond(context: context, status: .created, fields: [])
            case .failure(let error):
                self.fail(context: context, UploadFailure(error))
            }
        }
    }

    /// Answers with an error, drops what was stored, and ignores the rest of the request.
    private func fail(context: ChannelHandlerContext, _ failure: UploadFailure) {
        settings.log?("upload \(target) failed: \(failure.reason)")
        state = .ignoring
        releaseSlot()
        dropFile()
        let phrase = HTTPResponseStatus(statusCode: failure.status).reasonPhrase
        var fields: [HTTPField] = []
        if failure.status == 503 { fields.append(HTTPField(name: Self.retryAfter, value: "\(UploadAdmission.retryAfterBusy)")) }
        respond(context: context, status: HTTPResponse.Status(code: failure.status, reasonPhrase: phrase), fields: fields)
    }

    private func releaseSlot() {
        guard holdsSlot else { return }
        holdsSlot = false
        settings.slots?.release()
    }

    /// Gives the stored bytes up; a write still running on the pool finishes first.
    private func dropFile() {
        abandoned = true
        queue.removeAll()
        if !busy { discardFile() }
    }

    private func discardFile() {
        guard let file else { return }
        self.file = nil
        let temporaryFiles = settings.temporaryFiles
        // Unlinking a large file can take a while; keep it off the event loop. If the pool is
        // already gone, the shutdown sweep still has the file registered and removes it.
        settings.threadPool.submit { state in
            guard state == .active, temporaryFiles.unregister(path: file.temporaryPath) else { return }
            file.discard()
        }
    }

    private func respond(context: ChannelHandlerContext, status: HTTPResponse.Status, fields: [HTTPField]) {
        guard context.channel.isActive else { return }
        var response = HTTPResponse(status: status, headerFields: HTTPFields(fields))
        response.headerFields[.contentLength] = "0"
        context.write(wrapOutboundOut(.head(response)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    private static let allow = HTTPField.Name("Allow")!
    private static let retryAfter = HTTPField.Name("Retry-After")!
}
