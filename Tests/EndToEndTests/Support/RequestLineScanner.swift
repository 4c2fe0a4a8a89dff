/// Finds HTTP/1.1 request lines in a byte stream going to a server, so that a proxy can tell which
/// requests passed it (not only how many bytes).
///
/// A request line is recognised at the stream's start, after a CRLF, or right after the body a request's
/// `Content-Length` announced (the next request on a kept-alive connection follows a body's last byte,
/// which is seldom a line end), as `METHOD SP /… SP HTTP/1.x`; a line split across reads is found because
/// the last partial line is carried over. A random body byte sequence that happens to look like
/// `\r\nPATCH /x HTTP/1.1\r\n` would count too: negligible.
struct RequestLineScanner {
    private static let methods = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
    private static let longestLine = 8192
    private var carry: [UInt8] = []
    private var atLineStart = true
    /// Within a request's head: the `Content-Length` it named so far.
    private var headLength: Int?
    /// Bytes of the last request's body still to pass.
    private var bodyLeft = 0

    mutating func scan(_ bytes: ArraySlice<UInt8>) -> [String] {
        var found: [String] = []
        var data = carry + bytes
        var lineStart = atLineStart ? 0 : nil
        var index = 0
        while index < data.count {
            if bodyLeft > 0 {
                let skipped = min(bodyLeft, data.count - index)
                bodyLeft -= skipped
                index += skipped
                if bodyLeft == 0 { lineStart = index }  // the next request starts where the body ends
                continue
            }
            if data[index] == UInt8(ascii: "\n") {
                if let start = lineStart {
                    let line = data[start..<index]
                    if let request = Self.requestLine(line) {
                        found.append(request)
                        headLength = 0
                    } else if let length = headLength {
                        if line.elementsEqual([UInt8(ascii: "\r")]) {
                            (bodyLeft, headLength) = (length, nil)  // the head ended: its body follows
                        } else if let named = Self.contentLength(line) {
                            headLength = named
                        }
                    }
                }
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

    /// The value of a `Content-Length` header line (with its CR), if that is what the line is.
    private static func contentLength(_ bytes: ArraySlice<UInt8>) -> Int? {
        let line = String(decoding: bytes, as: UTF8.self)
        guard line.lowercased().hasPrefix("content-length:") else { return nil }
        return Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespacesAndNewlines))
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
