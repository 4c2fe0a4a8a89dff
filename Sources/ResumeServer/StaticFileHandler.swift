import Glibc
import NIOCore
import NIOHTTP1
import NIOPosix

/// Answers GET and HEAD from the served folder, with single byte ranges, and DELETE of a plain file
/// (StaticFileHandler+Delete); every other method is refused (uploads never get here: ``UploadHandler``, in
/// front of this one, takes them).
final class StaticFileHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    struct Settings: Sendable {
        /// Canonical path of the served folder.
        var root: String
        var acceptsUploads: Bool
        /// The draft's upload URLs, e.g. `/resumable_upload/`: never a file.
        var resumptionPrefix: String
        /// `--overwrite`: an upload may replace a file, and a DELETE remove one.
        var overwrite = false
        /// Behind TLS, where a `FileRegion` cannot go: file bodies are read into buffers instead.
        var secure: Bool = false
        /// With `--store s3://`: objects are served instead of files
        /// (``serveObject(context:head:components:objects:)``).
        var objects: S3Objects? = nil
    }

    enum Mode {
        case idle
        /// A GET or HEAD this handler answers.
        case serving
        /// Answered with an error; the rest of the request is read and dropped, then the connection
        /// closed (closing earlier could reset it under the unread body and lose the answer).
        case refusing(answered: Bool, requestEnded: Bool)
    }

    let settings: Settings
    let threadPool: NIOThreadPool
    var mode = Mode.idle
    private var requestVersion = HTTPVersion.http1_1
    private var keepAlive = true
    private var requestNumber = 0
    /// The `Date` of this connection's answers, and the `Last-Modified` of its last file.
    private var dates = IMFDateCache()
    var modifiedDates = IMFDateCache()
    /// The entity tag of this connection's last file, which the next request most often asks for again.
    var lastETag: (identity: FileIdentity, etag: String)?
    let truncationWatch = TruncationWatch()

    init(settings: Settings, threadPool: NIOThreadPool) {
        self.settings = settings
        self.threadPool = threadPool
    }

    // MARK: Inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        switch (part, mode) {
        case (.head(let head), _):
            requestNumber += 1
            requestVersion = head.version
            keepAlive = head.isKeepAlive
            route(context: context, head: head)
        case (.end, .refusing(let answered, _)):
            mode = .refusing(answered: answered, requestEnded: true)
            if answered { context.close(promise: nil) }
        case (.body, _), (.end, _):
            break
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        // The upload handler paces reads only for its own requests; the pipelining handler holds this
        // read back while a response is still being written.
        context.read()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        // A parser error has already been answered with 400 by NIO's protocol error handler,
        // which leaves closing to the pipeline; no other error leaves the connection usable either.
        context.close(promise: nil)
        context.fireErrorCaught(error)
    }

    private func route(context: ChannelHandlerContext, head: HTTPRequestHead) {
        let method = head.method
        if (method == .GET || method == .HEAD) && !head.uri.hasPrefix(settings.resumptionPrefix) {
            serve(context: context, head: head)
        } else if method == .DELETE && settings.acceptsUploads && !head.uri.hasPrefix(settings.resumptionPrefix) {
            delete(context: context, head: head)
        } else {
            let allowed = settings.acceptsUploads ? Self.allowed : "GET, HEAD"
            refuse(context: context, head: head, status: .methodNotAllowed, extra: [("Allow", allowed)])
        }
    }

    static let allowed = "GET, HEAD, PUT, POST, DELETE, OPTIONS"

    static func pathOnly(_ target: String) -> String {
        String(target.prefix { $0 != "?" && $0 != "#" })
    }

    func respond(context: ChannelHandlerContext, head: HTTPRequestHead, refusal: PathRefusal) {
        let status: HTTPResponseStatus =
            switch refusal {
            case .malformed: .badRequest
            case .forbidden: .forbidden
            case .hidden, .notFound, .conflict: .notFound
            }
        respond(context: context, head: head, status: status)
    }

    /// An answer without a file: a short text body (none for HEAD, though its length is announced).
    func respond(
        context: ChannelHandlerContext,
        head: HTTPRequestHead,
        status: HTTPResponseStatus,
        extra: [(String, String)] = [],
        body: Bool = true,
        text given: String? = nil,
        contentType: String = "text/plain; charset=utf-8"
    ) {
        guard context.channel.isActive else { return }
        let text = given ?? (body ? "\(status.code) \(status.reasonPhrase)\n" : "")
        var fields = connectionFields(now: Int64(time(nil)))
        fields.append(contentsOf: extra)
        fields.append(("Content-Type", contentType))
        fields.append(("Content-Length", String(text.utf8.count)))
        let responseHead = HTTPResponseHead(version: head.version, status: status, headers: HTTPHeaders(fields))
        context.write(wrapOutboundOut(.head(responseHead)), promise: nil)
        if head.method != .HEAD && !text.isEmpty {
            let body = context.channel.allocator.buffer(string: text)
            context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        }
        finish(context: context) {}
    }

    /// Refuses a request; its body is drained, not stored.
    private func refuse(
        context: ChannelHandlerContext,
        head: HTTPRequestHead,
        status: HTTPResponseStatus,
        extra: [(String, String)] = []
    ) {
        mode = .refusing(answered: false, requestEnded: false)
        keepAlive = false
        respond(context: context, head: head, status: status, extra: extra)
    }

    func finish(context: ChannelHandlerContext, then cleanup: @escaping () -> Void) {
        // Captured now: writing `.end` lets the pipelining handler deliver the next request,
        // which resets this handler's per-request state before the write completes.
        let request = requestNumber
        let closeAfter = !keepAlive
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { result in
            cleanup()
            let failed = (try? result.get()) == nil
            if request == self.requestNumber, case .refusing(_, let requestEnded) = self.mode {
                self.mode = .refusing(answered: true, requestEnded: requestEnded)
                if requestEnded || failed { context.close(promise: nil) }
            } else if closeAfter || failed {
                context.close(promise: nil)
            }
        }
    }

    /// The fields every answer of this connection starts with (Date, and Connection when needed), in an
    /// array that the rest of the head is added to: the head's fields become `HTTPHeaders` in one go.
    /// (`HTTPHeaders.add` checks each name for non-ASCII bytes, 2.5 % of a small download's instructions,
    /// for names that are all literals here; the response head's validator still checks every name and value.)
    func connectionFields(now: Int64) -> [(String, String)] {
        var fields: [(String, String)] = []
        fields.reserveCapacity(10)  // and the answer's own, see ``RangedAnswer``
        fields.append(("Date", dates.format(epochSeconds: now)))
        if !keepAlive {
            fields.append(("Connection", "close"))
        } else if requestVersion == .http1_0 {
            fields.append(("Connection", "keep-alive"))
        }
        return fields
    }
}
