import Glibc
import NIOCore

/// First in every connection's pipeline: counts the bytes it reads and writes, for the metrics (before
/// TLS, so a TLS connection counts what crosses the wire; a body sent from a file counts when it is
/// handed over), and drops a connection whose client has taken no byte for `--send-timeout` while the
/// server has bytes waiting for it (nginx's `send_timeout`). One handler for both: every read and every
/// write of every request passes through each handler of the pipeline.
///
/// A client reading a download a byte a second holds a connection, a file and the response's buffers
/// for hours. What counts is progress, not the length of a response: a slow but moving download of a
/// big file is never cut. NIO does not tell when a `FileRegion` makes progress, so the kernel is asked
/// (`TCP_INFO`: milliseconds since data last left the socket), and only while NIO holds more than its
/// write buffer's high mark — a connection with nothing to send costs no timer. The close is an abort
/// (`SO_LINGER` 0): a graceful one would wait behind the very bytes the client does not take.
final class SendTimeout: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = IOData

    private let limit: TimeAmount
    private let log: (@Sendable (String) -> Void)?
    /// `nil` with `--no-metrics`.
    private let metrics: ServerMetrics?
    private var check: Scheduled<Void>?

    init(limit: TimeAmount, log: (@Sendable (String) -> Void)?, metrics: ServerMetrics?) {
        self.limit = limit
        self.log = log
        self.metrics = metrics
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if let metrics { metrics.bytesReceived.add(unwrapInboundIn(data).readableBytes, ordering: .relaxed) }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if let metrics { metrics.bytesSent.add(unwrapOutboundIn(data).readableBytes, ordering: .relaxed) }
        context.write(data, promise: promise)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if !context.channel.isWritable && check == nil { schedule(context: context, in: limit) }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        check?.cancel()
        check = nil
        context.fireChannelInactive()
    }

    private func schedule(context: ChannelHandlerContext, in delay: TimeAmount) {
        check = context.eventLoop.assumeIsolated().scheduleTask(in: delay) { self.inspect(context: context) }
    }

    /// Still stuck? Then how long since the kernel last sent anything decides: drop, or look again when
    /// the limit would be reached.
    private func inspect(context: ChannelHandlerContext) {
        check = nil
        let channel = context.channel
        guard channel.isActive, !channel.isWritable, let socket = channel as? any SocketOptionProvider else { return }
        let limitMillis = limit.nanoseconds / 1_000_000
        socket.getTCPInfo().assumeIsolated().whenSuccess { info in
            guard channel.isActive, !channel.isWritable else { return }
            let idle = Int64(info.tcpi_last_data_sent)
            if idle >= limitMillis {
                self.log?(
                    "connection \(channel.remoteAddress?.description ?? "-") dropped: no byte taken for \(idle / 1000) "
                        + "s (--send-timeout)"
                )
                socket.setSoLinger(linger(l_onoff: 1, l_linger: 0)).whenComplete { _ in channel.close(promise: nil) }
            } else {
                self.schedule(context: context, in: .milliseconds(max(limitMillis - idle, 50)))
            }
        }
    }
}
