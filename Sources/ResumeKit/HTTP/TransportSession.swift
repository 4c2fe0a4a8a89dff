/// Runs the exchanges of one transfer, one after another. `perform` blocks the calling thread until the
/// exchange ends, so callers run it on a thread of their own, never on Swift's cooperative pool.
public protocol TransportSession: AnyObject {
    func perform(
        _ request: TransferRequest, settings: TransportSettings, cancellation: Cancellation,
        delegate: any ExchangeDelegate
    ) -> ExchangeResult
}

/// A session that can also start an exchange without waiting for it (libcurl's multi interface). `done` and
/// the delegate's callbacks run on the transport's own thread, where the next exchange may start at once.
protocol StartingSession: TransportSession {
    /// - Returns: nil once the exchange runs (then `done` tells its end), or the result of one that could
    ///   not start (then `done` is never called).
    func start(
        _ request: TransferRequest, settings: TransportSettings, cancellation: Cancellation,
        delegate: any ExchangeDelegate, done: @escaping (ExchangeResult) -> Void
    ) -> ExchangeResult?
}
