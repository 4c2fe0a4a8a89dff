/// A response's declared body length (RFC 9110 §8.6, RFC 9112 §6.3), read from the raw header lines:
/// libcurl silently drops a `Content-Length` it cannot represent and reads to the close, so a body cut short
/// looks complete. Here every copy is visible, and the state machines can refuse such an answer.
public enum ContentLength: Sendable, Equatable {
    /// No `Content-Length`, or a `Transfer-Encoding` that overrides it.
    case absent
    case length(Int64)
    /// Present but not one non-negative decimal that fits in 63 bits (or copies that disagree).
    case invalid(String)

    public init(_ headers: HeaderFields) {
        if headers.contains("Transfer-Encoding") {
            self = .absent
            return
        }
        var found: Int64?
        for value in headers.values("Content-Length") {
            // `Content-Length: 5, 5` (a list of one repeated value) is allowed by RFC 9110; anything else is not.
            for member in value.utf8.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false) {
                let text = Substring(member).trimmingSpaces()
                guard let n = Self.decimal(text) else {
                    self = .invalid("the server declared an unusable Content-Length '\(text.prefix(40))'")
                    return
                }
                if let f = found, f != n {
                    self = .invalid("the server declared two lengths, \(f) and \(n)")
                    return
                }
                found = n
            }
        }
        self = found.map { .length($0) } ?? .absent
    }

    /// Digits only (no sign, no spaces), at most what an Int64 holds.
    static func decimal(_ text: String) -> Int64? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            return nil
        }
        return Int64(text)
    }

    /// The length, when one was declared and usable.
    public var value: Int64? {
        if case .length(let n) = self { return n }
        return nil
    }
}
