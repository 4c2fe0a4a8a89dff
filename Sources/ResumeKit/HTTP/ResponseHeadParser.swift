/// Splits the header lines libcurl hands over, every response of a transfer (1xx heads, redirects, the final
/// one) a line at a time, into response heads: a status line opens a head and an empty line closes it.
public struct ResponseHeadParser: Sendable {
    private var current: ResponseHead?

    public init() {}

    /// Feeds one raw header line (with or without CR LF). Returns the head it completes, if any.
    public mutating func feed(line rawLine: some StringProtocol) -> ResponseHead? {
        var line = String(rawLine)
        return line.withUTF8 { feed(bytes: UnsafeRawBufferPointer($0)) }
    }

    /// The same on the line's bytes as libcurl hands them over: no String of the whole line is made (and no
    /// Character-wise work, whose grapheme breaking showed in profiles of many small downloads).
    public mutating func feed(bytes raw: UnsafeRawBufferPointer) -> ResponseHead? {
        var end = raw.count
        while end > 0, raw[end - 1] == UInt8(ascii: "\n") || raw[end - 1] == UInt8(ascii: "\r") { end -= 1 }
        let bytes = raw[0..<end]
        if bytes.isEmpty {
            defer { current = nil }
            return current
        }
        if bytes.starts(with: "HTTP/".utf8) {
            current = Self.parseStatusLine(Substring(String(decoding: bytes, as: UTF8.self)))
            return nil
        }
        guard current != nil else { return nil }
        if let first = bytes.first, first == UInt8(ascii: " ") || first == UInt8(ascii: "\t") {
            // Obsolete line folding: append to the previous value.
            if let last = current!.headers.fields.indices.last {
                // One space between non-empty parts only: an empty field folded onto the next line gave
                // ` "etag"`, with a space no comparison expects (found by FuzzResponseHead).
                let (value, more) = (current!.headers.fields[last].value, Self.trimmed(bytes))
                if !more.isEmpty { current!.headers.fields[last].value = value.isEmpty ? more : value + " " + more }
            }
            return nil
        }
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")) else { return nil }
        current!.headers.append(Self.trimmed(bytes[..<colon]), Self.trimmed(bytes[(colon + 1)...]))
        return nil
    }

    private static func trimmed(_ bytes: Slice<UnsafeRawBufferPointer>) -> String {
        String(decoding: bytes.trimmingSpaceBytes(), as: UTF8.self)
    }

    static func parseStatusLine(_ line: Substring) -> ResponseHead {
        let parts = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
        // Three digits (RFC 9110 §15): `Int("-2")` and `Int("+200")` parse, and a negative status was let
        // through (found by FuzzResponseHead). Anything else is status 0, which no rule accepts.
        let code = parts.count > 1 ? parts[1].utf8 : Substring().utf8
        let status =
            code.count == 3 && code.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
            ? Int(parts[1]) ?? 0 : 0
        let reason = parts.count > 2 ? String(parts[2]) : ""
        return ResponseHead(status: status, reason: reason)
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs (on bytes: no grapheme breaking).
    func trimmingSpaces() -> String { String(Substring(Substring(self).utf8.trimmingSpaceBytes())) }
}

extension BidirectionalCollection<UInt8> {
    /// Without leading and trailing spaces and tabs.
    func trimmingSpaceBytes() -> SubSequence {
        let isSpace = { (b: UInt8) in b == UInt8(ascii: " ") || b == UInt8(ascii: "\t") }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else {
            return self[endIndex...]
        }
        return self[first...last]
    }
}
