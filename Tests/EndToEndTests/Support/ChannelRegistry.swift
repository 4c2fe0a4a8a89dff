import NIOCore

/// The live connections of a test server, so that stopping it also drops the connections it accepted
/// (closing a listening channel alone leaves them open, and the servers share NIO's singleton event loop
/// group, which is never shut down).
final class ChannelRegistry: Sendable {
    private let channels = Locked([ObjectIdentifier: any Channel]())

    func add(_ channel: any Channel) {
        let key = ObjectIdentifier(channel)
        channels.withLock { $0[key] = channel }
        channel.closeFuture.whenComplete { [channels] _ in
            channels.withLock { $0[key] = nil }
        }
    }

    var count: Int { channels.withLock { $0.count } }

    /// Closes every registered channel; completes when all are closed.
    func closeAll(listener: any Channel) -> EventLoopFuture<Void> {
        let all = channels.withLock { Array($0.values) } + [listener]
        let closed = all.map { channel in channel.close().recover { _ in } }
        return EventLoopFuture.andAllComplete(closed, on: listener.eventLoop)
    }
}
