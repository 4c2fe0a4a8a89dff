import NIOCore
import NIOHTTP1
import NIOPosix

/// Runs ``TusMachine`` on the wire, over the upload store, beside the IETF draft that
/// ``DraftHandler`` serves behind it; requests that are not tus pass through untouched.
///
/// A `POST` with `Tus-Resumable` to a folder creates an upload whose file lands in that folder
/// under its `filename` metadata; to any other path, at that path. The same rules as every upload
/// apply: `SafePath`, no overwrite without `--overwrite`, the size and slot limits.
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

    static let prefix = TusMachine.prefix

    /// A body being stored: a PATCH, or a POST with its first bytes.
    struct Append {
        var ended = false
        var failed = false
        var checksum: TusChecksum?
        /// A creation (201 with its URL) rather than an append (204).
        var created: Bool
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
        receiver = UploadReceiver(
            store: settings.store, table: settings.table, threadPool: settings.threadPool, expiry: settings.expiry)
    }

    // MARK: Inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        switch (part, state) {
        case (.head(let head), _):
            version = head.version
            receiver.begin()
            let request = TusMachine.classify(
                method: head.method, target: head.uri, headers: head.headers, maxSize: settings.admission.maxUploadSize)
            if request == .notTus {
                state = .passing
                context.fireChannelRead(data)
            } else {
                handle(context: context, head: head, request)
            }
        case (_, .passing):
            if case .end = part { state = .idle }
            context.fireChannelRead(data)
        case (.body(let buffer), .appending(var append)):
            guard !append.failed else { return }
            append.checksum?.update(buffer)
            state = .appending(append)
            if !receiver.receive(buffer) { fail(context: context, &append, status: 400) }
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
    func abandon() {
        guard case .appending(var append) = state, !append.ended, let sink = receiver.sink else { return }
        append.ended = true
        append.failed = true
        state = .appending(append)
        sink.end(keep: append.checksum == nil) { _ in }
    }

    /// Answers an append that cannot go on; the rest of its body is dropped, and once it has ended the
    /// connection closes. What was stored counts (unless a checksum had to vouch for it).
    func fail(context: ChannelHandlerContext, _ append: inout Append, status: Int) {
        append.failed = true
        receiver.discard()
        state = .appending(append)
        receiver.sink?.end(keep: append.checksum == nil) { _ in }
        write(context: context, TusMachine.answer(status), close: true, bodyless: false)
        receiver.resume(context: context)
        if append.ended { endFailed(context: context, append) }
    }

    func endFailed(context: ChannelHandlerContext, _ append: Append) {
        state = .answered(requestEnded: true, close: true)
        context.close(promise: nil)
    }
}
