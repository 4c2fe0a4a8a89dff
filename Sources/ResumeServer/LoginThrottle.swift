import Synchronization

/// Slows down password guessing: after `limit` failed logins from one address within `window`,
/// that address gets 429 with `Retry-After` until the window has passed, without a check.
///
/// Per address, not per user: a guesser tries many names, and one user's colleagues behind the
/// same address are not locked out by a stranger elsewhere. The table is bounded; the oldest
/// entries go first.
final class LoginThrottle: Sendable {
    private struct Record {
        var failures: Int
        var windowStart: ContinuousClock.Instant
    }

    let limit: Int
    let window: Duration
    private let records = Mutex<[String: Record]>([:])
    private static let capacity = 10_000

    init(limit: Int = 5, window: Duration = .seconds(60)) {
        self.limit = limit
        self.window = window
    }

    /// Seconds `address` must wait before it may try again, or `nil` when it may try now.
    func retryAfter(_ address: String, now: ContinuousClock.Instant = .now) -> Int? {
        records.withLock { records in
            guard let record = records[address] else { return nil }
            let end = record.windowStart + window
            guard now < end else {
                records[address] = nil
                return nil
            }
            guard record.failures >= limit else { return nil }
            let remaining = end - now
            return max(1, Int(remaining.components.seconds) + (remaining.components.attoseconds > 0 ? 1 : 0))
        }
    }

    /// Counts one failed login from `address`.
    func recordFailure(_ address: String, now: ContinuousClock.Instant = .now) {
        records.withLock { records in
            if var record = records[address], now < record.windowStart + window {
                record.failures += 1
                records[address] = record
            } else {
                if records.count >= Self.capacity,
                    let oldest = records.min(by: { $0.value.windowStart < $1.value.windowStart })
                {
                    records[oldest.key] = nil
                }
                records[address] = Record(failures: 1, windowStart: now)
            }
        }
    }
}
