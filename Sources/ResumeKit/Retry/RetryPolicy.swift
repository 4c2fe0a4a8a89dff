/// When to try again after a failed attempt: capped exponential backoff with jitter.
///
/// With the defaults (base 1 s, cap 30 s) the delays before retries 1, 2, 3 … are drawn from
/// [0.5, 1], [1, 2], [2, 4], [4, 8], [8, 16], [15, 30], [15, 30] … seconds. A server's `Retry-After`
/// replaces the computed delay (capped at 10 minutes). The count of failures starts again whenever an
/// attempt made progress, so a long transfer over a flaky link is not cut off by its number of drops.
public struct RetryPolicy: Sendable, Equatable {
    /// nil: retry forever (`--retries inf`).
    public var maxRetries: Int?
    public var baseDelay: Double
    public var maxDelay: Double

    public static let `default` = RetryPolicy(maxRetries: 10, baseDelay: 1, maxDelay: 30)

    public init(maxRetries: Int?, baseDelay: Double = 1, maxDelay: Double = 30) {
        self.maxRetries = maxRetries
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
    }

    /// The delay before a retry, or nil when the retries are used up.
    /// - Parameters:
    ///   - failures: which retry this is (1 for the first).
    ///   - retryAfter: the seconds a server's `Retry-After` asked for; the delay is never shorter.
    ///   - jitter: a number in 0...1 (injected so tests are repeatable).
    public func delay(failures: Int, retryAfter: Double? = nil, jitter: Double) -> Double? {
        if let max = maxRetries, failures > max { return nil }
        if let retryAfter { return min(max(0, retryAfter), 600) }
        let capped = min(baseDelay * Double(1 << max(0, min(failures - 1, 30))), maxDelay)
        return capped / 2 + capped / 2 * min(max(jitter, 0), 1)
    }

    /// Parses `Retry-After`: delay-seconds or an HTTP date (relative to `now`, seconds since 1970).
    public static func retryAfter(_ value: String?, now: Int64) -> Double? {
        guard let value = value?.trimmingSpaces(), !value.isEmpty else { return nil }
        if let seconds = Int64(value), seconds >= 0 { return Double(seconds) }
        if let date = HTTPDate.parse(value) { return Double(max(0, date - now)) }
        return nil
    }

    /// Answers worth another try: the request timed out, rate limiting, server trouble, and S3's error
    /// codes that say as much under another status (a 400 `RequestTimeout`). The one rule of the library:
    /// the state machines, S3's answers and the probe all ask here.
    public static func isRetryable(status: Int, errorCode: String? = nil) -> Bool {
        if [408, 425, 429, 500, 502, 503, 504].contains(status) { return true }
        return ["SlowDown", "RequestTimeout", "InternalError", "ServiceUnavailable", "Throttling"].contains(
            errorCode ?? "")
    }

    /// The server says it is busy (429, 503): all a probe waits out. Any other answer to a probe says what
    /// the server speaks (a plain server may answer OPTIONS with any error and still take the upload).
    public static func isBusy(status: Int) -> Bool { status == 429 || status == 503 }
}
