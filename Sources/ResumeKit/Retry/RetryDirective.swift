/// What to do after a failed exchange: the one table of docs/guarantees.md ("Faults: the same answer on
/// every path"), the same for every path.
public enum RetryDirective: Sendable, Equatable {
    /// Try again after `delay` seconds; the retry is counted.
    case retry(delay: Double)
    /// The network is gone: try again after `delay` seconds without spending a retry (`--wait-network`).
    case waitForNetwork(delay: Double)
    /// Retries are used up: the transfer stops, resumable (exit 75).
    case exhausted
    /// No retry can help (exit 1).
    case fail
}
