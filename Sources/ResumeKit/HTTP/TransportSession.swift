/// Runs the exchanges of one transfer, one after another. `perform` blocks the calling thread until the
/// exchange ends, so callers run it on a thread of their own, never on Swift's cooperative pool.
public protocol TransportSession: AnyObject {
    func perform(
        _ request: TransferRequest, settings: TransportSettings, cancellation: Cancellation,
        delegate: any ExchangeDelegate
    ) -> ExchangeResult
}
