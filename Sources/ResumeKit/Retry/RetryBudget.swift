import Synchronization

/// The retries that the segments (or parts) of one transfer share, a token bucket like the AWS SDKs'
/// standard retry strategy: a retry takes ``retryCost`` tokens (a stall ``timeoutCost``), and an attempt
/// that moved bytes pays its retry back, so only fruitless retries drain the bucket. A segment's own count
/// starts again whenever it moves bytes; the bucket keeps one that fails, moves a little and fails again from
/// retrying for ever while the others fail too. An empty bucket ends every segment's retrying (exit 75).
final class RetryBudget: Sendable {
    static let retryCost = 5
    static let timeoutCost = 10
    private let tokens: Mutex<Int>

    /// A bucket for `retries` fruitless retries of the plain kind.
    init(retries: Int) {
        tokens = Mutex(max(0, retries) * Self.retryCost)
    }

    /// A budget for the segments of one transfer under `policy`: each segment's own limit, once per
    /// segment; nil (no shared limit) when retries are unlimited.
    static func forSegments(_ policy: RetryPolicy, count: Int) -> RetryBudget? {
        policy.maxRetries.map { RetryBudget(retries: $0 * max(1, count)) }
    }

    /// Takes what a retry after `fault` costs; false (and nothing taken) when the bucket cannot pay it.
    /// - Parameter progressMade: the failed attempt moved bytes: the retry is paid back at once.
    func withdraw(after fault: Fault, progressMade: Bool) -> Bool {
        if progressMade { return true }
        let cost = if case .stalled = fault { Self.timeoutCost } else { Self.retryCost }
        return tokens.withLock { tokens in
            guard tokens >= cost else { return false }
            tokens -= cost
            return true
        }
    }

    var remaining: Int { tokens.withLock { $0 } }
}
