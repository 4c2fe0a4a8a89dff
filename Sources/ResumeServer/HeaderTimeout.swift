import NIOCore
import NIOHTTP1

/// Closes a connection whose next request head does not arrive in full within the limit, counted
/// from the connection's start or from the end of the previous response.
///
/// Without it a client that sends its head a byte at a time (slowloris) holds a connection, a
/// descriptor and a parser for as long as it likes. A request that is being received or answered
/// is never timed here: only the wait for a head is.
///
/// One timer per connection, not one per request: a request only notes when the wait began (or that
/// it ended), and the timer, when it fires, closes the connection or sets itself for the rest of the
/// wait. Scheduling and cancelling a timer for every request cost a keep-alive connection's
/// requests 8 % of their instructions (NIO finds a cancelled task by a scan of all of them).
final class HeaderTimeout: ChannelDuplexHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private let limit: TimeAmount
    private var timer: Scheduled<Void>?
    /// When the wait for the next head began; `nil` while a request is in progress.
    private var waitingSince: NIODeadline?
    /// Requests whose head arrived and whose response has not ended.
    private var inProgress = 0

    init(limit: TimeAmount) {
        self.limit = limit
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { startWaiting(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        startWaiting(context: context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        waitingSince = nil
        timer?.cancel()
        timer = nil
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head = unwrapInboundIn(data) {
            inProgress += 1
            waitingSince = nil
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) {
            inProgress = max(0, inProgress - 1)
            // Noted before the write: a pipelined head released by it ends the wait again.
            if inProgress == 0 { startWaiting(context: context) }
        }
        context.write(data, promise: promise)
    }

    private func startWaiting(context: ChannelHandlerContext) {
        let now = NIODeadline.now()
        waitingSince = now
        if timer == nil { schedule(context: context, at: now + limit) }
    }

    private func schedule(context: ChannelHandlerContext, at deadline: NIODeadline) {
        timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) {
            self.timer = nil
            // A request in progress: the wait after its answer sets the timer again.
            guard let since = self.waitingSince else { return }
            if NIODeadline.now() >= since + self.limit {
                context.channel.close(promise: nil)
            } else {
                self.schedule(context: context, at: since + self.limit)
            }
        }
    }
}
