/// Sleeps between attempts; injected so that tests run the retry table in milliseconds.
public protocol RetryClock: Sendable {
    /// Seconds since 1970, for `Retry-After` dates.
    var now: Int64 { get }
    /// Sleeps up to `seconds`; returns false when `cancellation` stopped the sleep.
    func sleep(seconds: Double, cancellation: Cancellation) -> Bool
}
