import NIOCore
import NIOHTTP1

/// Counts each answered request by method and status, and times it from its head to the end of its
/// answer, for the metrics. Beside the access log, it sees every exchange; a request whose
/// connection closed before any answer is not counted (it has no status).
final class RequestMetrics: ChannelDuplexHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private let metrics: ServerMetrics
    /// Requests not yet answered in full, oldest first (NIO's pipelining handler keeps it short).
    private var pending: [(method: String, start: NIODeadline, status: UInt)] = []

    init(metrics: ServerMetrics) {
        self.metrics = metrics
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head(let head) = unwrapInboundIn(data) {
            pending.append((head.method.rawValue, .now(), 0))
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if !pending.isEmpty {
            switch unwrapOutboundIn(data) {
            case .head(let head) where head.status.code >= 200:
                pending[0].status = head.status.code
            case .end:
                let done = pending.removeFirst()
                let seconds = Double((NIODeadline.now() - done.start).nanoseconds) / 1e9
                metrics.request(method: done.method, status: done.status, seconds: seconds)
            default:
                break
            }
        }
        context.write(data, promise: promise)
    }
}
