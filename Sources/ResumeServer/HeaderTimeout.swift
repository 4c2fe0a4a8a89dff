import NIOCore
import NIOHTTP1

/// Closes a connection whose next request head does not arrive in full within the limit, counted
/// from the connection's start or from the end of the previous response.
///
/// Without it a client that sends its head a byte at a time (slowloris) holds a connection, a
/// descriptor and a parser for as long as it likes. A request that is being received or answered
/// is never timed here: only the wait for a head is.
final class HeaderTimeout: ChannelDuplexHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private let limit: TimeAmount
    private var timer: Scheduled<Void>?
    /// Requests whose head arrived and whose response has not ended.
    private var inProgress = 0

    init(limit: TimeAmount) {
        self.limit = limit
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { arm(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        arm(context: context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        disarm()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head = unwrapInboundIn(data) {
            inProgress += 1
            disarm()
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) {
            inProgress = max(0, inProgress - 1)
            // Armed before the write: a pipelined head released by it disarms the timer again.
            if inProgress == 0 { arm(context: context) }
        }
        context.write(data, promise: promise)
    }

    private func arm(context: ChannelHandlerContext) {
        disarm()
        let channel = context.channel
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: limit) {
            channel.close(promise: nil)
        }
    }

    private func disarm() {
        timer?.cancel()
        timer = nil
    }
}
