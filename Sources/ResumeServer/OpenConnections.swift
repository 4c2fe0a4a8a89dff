import NIOCore
import NIOHTTP1
import Synchronization

/// Every open connection, shared by all event loops: `--max-connections` is enforced here, the
/// graceful stop asks each one to end after its request (and closes the rest when the drain time is
/// up), and the metrics read the count.
///
/// A connection over the cap is refused at once (503 and closed, or just closed over TLS) rather
/// than left waiting: a descriptor per connection beyond the cap would eat the room kept for the
/// files requests open, and past the process's descriptor limit `accept` itself fails.
final class OpenConnections: Sendable {
    let limit: Int
    private let channels = Mutex<[ObjectIdentifier: any Channel]>([:])
    private let refusedTotal = Atomic<Int>(0)

    init(limit: Int) {
        self.limit = limit
    }

    var count: Int { channels.withLock { $0.count } }
    var refused: Int { refusedTotal.load(ordering: .relaxed) }

    /// Counts `channel` in, unless the cap is reached; it is counted out when it closes.
    func admit(_ channel: any Channel) -> Bool {
        let key = ObjectIdentifier(channel)
        let admitted = channels.withLock { channels in
            guard channels.count < limit else { return false }
            channels[key] = channel
            return true
        }
        guard admitted else {
            refusedTotal.add(1, ordering: .relaxed)
            return false
        }
        channel.closeFuture.whenComplete { _ in _ = self.channels.withLock { $0.removeValue(forKey: key) } }
        return true
    }

    /// Asks every connection to close once its request in progress is answered (an idle one closes now).
    func quiesce() {
        for channel in snapshot() {
            channel.eventLoop.execute { channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent()) }
        }
    }

    /// Closes every connection now; their uploads settle as for any connection that drops.
    func closeAll() {
        for channel in snapshot() { channel.close(promise: nil) }
    }

    private func snapshot() -> [any Channel] {
        channels.withLock { Array($0.values) }
    }
}

/// The whole pipeline of a connection over `--max-connections`: a 503 that asks to come back, then
/// the close. Its request is not read: the answer does not depend on it.
final class ConnectionRefusal: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private static let answer =
        "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
    private let plain: Bool

    /// `plain`: `false` over TLS, where no answer can be sent before a handshake (the close says it).
    init(plain: Bool) {
        self.plain = plain
    }

    func channelActive(context: ChannelHandlerContext) {
        guard plain else { return context.close(promise: nil) }
        let bytes = context.channel.allocator.buffer(string: Self.answer)
        let channel = context.channel
        context.writeAndFlush(NIOAny(bytes)).whenComplete { _ in channel.close(promise: nil) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
}
