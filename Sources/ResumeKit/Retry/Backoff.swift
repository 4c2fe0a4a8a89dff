import FoundationEssentials

/// The failure count of one transfer (or segment) under a `RetryPolicy`, started again after any attempt
/// that moved bytes.
struct Backoff {
    let policy: RetryPolicy
    private(set) var failures = 0

    init(_ policy: RetryPolicy) { self.policy = policy }

    /// Counts a failed attempt and returns the delay before the next one, or nil when retries are used up.
    mutating func next(progressMade: Bool, retryAfter: String? = nil, now: Int64 = Int64(Date().timeIntervalSince1970))
        -> Double?
    {
        if progressMade { failures = 0 }
        failures += 1
        let after = retryAfter.flatMap { RetryPolicy.retryAfter($0, now: now) }
        return policy.delay(failures: failures, retryAfter: after, jitter: Double.random(in: 0...1))
    }

    /// The delay before the next try while the network is gone: doubling from the policy's base up to
    /// 60 s, with jitter; it spends none of the retries.
    mutating func networkWait(progressMade: Bool) -> Double {
        if progressMade {
            failures = 0
            networkWaits = 0
        }
        networkWaits += 1
        let capped = min(policy.baseDelay * Double(1 << min(networkWaits - 1, 16)), Self.maxNetworkWait)
        return max(0.05, capped / 2 + capped / 2 * Double.random(in: 0...1))
    }

    static let maxNetworkWait = 60.0
    private var networkWaits = 0
}
