/// Finds HTTP/1.1 request lines in a byte stream going to a server, so that a proxy can tell which
/// requests passed it (not only how many bytes).
///
/// A request line is recognised at the stream's start or after a CRLF, as `METHOD SP /… SP HTTP/1.x`;
/// a line split across reads is found because the last partial line is carried over. A random body
/// byte sequence that happens to look like `\r\nPATCH /x HTTP/1.1\r\n` would count too: negligible.
struct RequestLineScanner {
    private static let methods = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
    private static let longestLine = 8192
    private var carry: [UInt8] = []
    private var atLineStart = true

    mutating func scan(_ bytes: ArraySlice<UInt8>) -> [String] {
        var found: [String] = []
        var data = carry + bytes
        var lineStart = atLineStart ? 0 : nil
        var index = 0
        while index < data.count {
            if data[index] == UInt8(ascii: "\n") {
                if let start = lineStart, let line = Self.requestLine(data[start..<index]) { found.append(line) }
                lineStart = index + 1
            }
            index += 1
        }
        if let start = lineStart, data.count - start <= Self.longestLine {
            carry = Array(data[start...])
            atLineStart = true
        } else {
            carry = []
            atLineStart = false
        }
        data.removeAll()
        return found
    }

    private static func requestLine(_ bytes: ArraySlice<UInt8>) -> String? {
        guard bytes.count < longestLine, bytes.last == UInt8(ascii: "\r") else { return nil }
        let line = String(decoding: bytes.dropLast(), as: UTF8.self)
        let parts = line.split(separator: " ")
        guard parts.count == 3, methods.contains(String(parts[0])),
            parts[1].hasPrefix("/") || parts[1].hasPrefix("http"),
            parts[2].hasPrefix("HTTP/1.")
        else { return nil }
        return line
    }
}
