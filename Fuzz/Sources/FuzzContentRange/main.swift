import FuzzCheck
@testable import ResumeKit

/// `Content-Range`, `Content-Length` and `Retry-After` values. Properties: a parsed range lies inside the
/// resource and re-serializes to an equal range; a usable length is non-negative and round-trips; a
/// `Retry-After` delay is a finite number the retry policy caps.
func fuzzContentRange(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let value = text(data, size)
    if let parsed = ContentRange(value) {
        if let total = parsed.completeLength { require(total >= 0, "negative complete length") }
        if let range = parsed.range {
            require(range.lowerBound >= 0, "range starts at \(range.lowerBound)")
            if let total = parsed.completeLength { require(range.upperBound < total, "range \(range) beyond \(total)") }
        }
        let again = "bytes " + (parsed.range.map { "\($0.lowerBound)-\($0.upperBound)" } ?? "*") + "/"
            + (parsed.completeLength.map(String.init) ?? "*")
        require(ContentRange(again) == parsed, "\(value) → \(again) does not round-trip")
    }
    switch ContentLength(["Content-Length": value]) {
    case .length(let n):
        require(n >= 0, "negative length")
        require(ContentLength(["Content-Length": String(n)]) == .length(n), "length \(n) does not round-trip")
    case .invalid, .absent: break
    }
    if let delay = RetryPolicy.retryAfter(value, now: 1_800_000_000) {
        require(delay.isFinite, "Retry-After \(value) gives \(delay)")
        let capped = RetryPolicy(maxRetries: 3).delay(failures: 1, retryAfter: delay, jitter: 0.5)
        require(capped.map { $0 >= 0 && $0 <= 600 } ?? true, "delay \(capped ?? -1)")
    }
    return 0
}

fuzz { data, size in data.map { fuzzContentRange($0, size) } ?? 0 }
