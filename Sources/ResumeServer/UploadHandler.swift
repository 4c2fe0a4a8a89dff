import NIOCore
import NIOHTTP1
import NIOPosix

/// Stores uploads — plain `PUT`/`POST`, draft-ietf-httpbis-resumable-upload and tus 1.0.0 — over the durable
/// ``UploadBackend`` (a folder or S3), in one way for all: ``UploadRequest`` says what a request asks, this
/// handler creates or claims the upload, receives the body into the store's sink, settles it and finishes
/// the upload; the protocol only picks the words of each answer (``UploadDialect``). Other requests pass on
/// to the file handler.
///
/// A creation is durable (record and empty data file) before any answer names its URL. A request that finds
/// another one still appending to its upload (a client that retried before the server noticed the old
/// connection die) stops that one, waits for its bytes to settle, then goes on.
final class UploadHandler: ChannelDuplexHandler {
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
        /// Milliseconds an idle upload is kept.
        var expiry: Int64
        var log: (@Sendable (String) -> Void)?
    }

    /// The upload request being handled.
    struct Exchange {
        var head: HTTPRequestHead
        var dialect: UploadRequest.Dialect
        var ended = false
        /// Answered, or about to be: the rest of the body is read and dropped.
        var answered = false
        /// The connection ends with this request (answered before its body was read, or no keep-alive).
        var closeAfter = false
        var created = false
        /// Whether the request carries the upload's last byte (`nil`: the upload's length says).
        var completes: Bool? = nil
        /// Bytes beyond the upload's limit mean an inconsistent length (400), not a size refusal (413).
        var lengthKnown = false
        /// tus `Upload-Checksum`: nothing counts unless the whole body matches.
        var checksum: TusChecksum?
    }

    let settings: Settings
    var exchange: Exchange?
    /// A request that is not an upload, on its way to the file handler.
    var passing = false
    let receiver: UploadReceiver

    init(settings: Settings) {
        self.settings = settings
        receiver = UploadReceiver(
            store: settings.store, table: settings.table, threadPool: settings.threadPool, expiry: settings.expiry)
    }

    var maxSize: Int64? { settings.admission.maxUploadSize }

    // MARK: Inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        if passing {
            if case .end = part { passing = false }
            return context.fireChannelRead(data)
        }
        switch part {
        case .head(let head):
            let request = UploadRequest.classify(head, maxSize: maxSize)
            guard request != .pass else {
                passing = true
                return context.fireChannelRead(data)
            }
            receiver.begin()
            start(context: context, head: head, request)
        case .body(let buffer):
            guard var current = exchange, !current.answered else { return }
            current.checksum?.update(buffer)
            exchange = current
            if !receiver.receive(buffer) {
                refuseMidBody(
                    context: context, current.dialect.tooLong(lengthKnown: current.lengthKnown, maxSize: maxSize))
            }
        case .end:
            guard var current = exchange else { return }
            current.ended = true
            exchange = current
            if current.answered {
                exchange = nil
                if current.closeAfter { context.close(promise: nil) }
            } else if receiver.sink != nil {
                endBody(context: context)
            }
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if exchange == nil {
            context.fireChannelReadComplete()
        } else {
            read(context: context)
        }
    }

    /// Reads pause while the store's sink holds enough of an upload's body.
    func read(context: ChannelHandlerContext) {
        if let current = exchange, !current.answered {
            receiver.read(context: context, holding: true)
        } else {
            context.read()
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        receiver.closed()
        abandon()
        context.fireChannelInactive()
    }

    /// The client is gone mid-body (``endMidBody(_:abandoned:)``).
    func abandon() {
        guard let current = exchange, !current.ended, !current.answered, receiver.sink != nil else { return }
        endMidBody(current, abandoned: true)
    }

    /// The request's body has all arrived: its bytes count if its checksum (if any) matches.
    func endBody(context: ChannelHandlerContext) {
        let matched = exchange?.checksum?.matches() ?? true
        receiver.sink?.end(keep: matched) { self.settled(context: context, $0, checksumMatched: matched) }
    }
}
