import NIOCore

/// Counts the bytes a connection reads and writes, for the metrics; first in the pipeline, so a TLS
/// connection counts what crosses the wire. A body sent from a file counts when it is handed over.
final class TrafficCounter: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = IOData

    private let metrics: ServerMetrics

    init(metrics: ServerMetrics) {
        self.metrics = metrics
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        metrics.bytesReceived.add(unwrapInboundIn(data).readableBytes, ordering: .relaxed)
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        metrics.bytesSent.add(unwrapOutboundIn(data).readableBytes, ordering: .relaxed)
        context.write(data, promise: promise)
    }
}
