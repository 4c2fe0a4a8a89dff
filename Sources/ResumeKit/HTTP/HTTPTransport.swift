/// Makes sessions that run HTTP exchanges.
public protocol HTTPTransport: Sendable {
    /// A session for one transfer, used from one thread; it keeps connections open between exchanges.
    func makeSession() -> any TransportSession
}
