/// What `serve` writes to its log is one line per event, whatever a client sent: control characters
/// (C0, DEL, C1, and Unicode's line and paragraph separators) are written as `\xNN` or `\u{NNNN}`, so a
/// request path or a file name holding `%0A` cannot forge a line of its own.
enum LogLine {
    static func escaped(_ line: String) -> String {
        // Nearly every line is printable ASCII: checked by bytes, returned as it is.
        if line.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) { return line }
        var out = ""
        out.reserveCapacity(line.utf8.count + 8)
        for scalar in line.unicodeScalars {
            switch scalar.value {
            case 0..<0x20, 0x7F...0x9F:
                let hex = String(scalar.value, radix: 16, uppercase: true)
                out += "\\x" + (hex.count == 1 ? "0" + hex : hex)
            case 0x2028, 0x2029:
                out += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
            default:
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
