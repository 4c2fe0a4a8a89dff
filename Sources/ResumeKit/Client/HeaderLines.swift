/// Turns the user's `-H 'Name: value'` lines into header fields.
public enum HeaderLines {
    public static func parse(_ lines: [String]) throws(TransferError) -> HeaderFields {
        var fields = HeaderFields()
        for line in lines {
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else {
                throw TransferError(.usage, "bad header '\(line)': expected 'Name: value'")
            }
            let name = line[..<colon].trimmingSpaces()
            guard name.allSatisfy({ $0.isASCII && !$0.isWhitespace && $0 != ":" }) else {
                throw TransferError(.usage, "bad header name in '\(line)'")
            }
            let value = line[line.index(after: colon)...].trimmingSpaces()
            // On bytes: "\r\n" is one Character, which `contains("\r")` and `contains("\n")` both miss.
            guard !value.utf8.contains(where: { $0 == 13 || $0 == 10 || $0 == 0 }) else {
                throw TransferError(.usage, "header '\(name)' contains a line break")
            }
            fields.append(name, value)
        }
        return fields
    }

    /// A download's header lines, less `Accept-Encoding`: ranges address the bytes as sent, and a body
    /// encoded on the fly cannot be resumed.
    static func forDownload(_ lines: [String]) throws(TransferError) -> HeaderFields {
        var fields = try parse(lines)
        fields.remove("Accept-Encoding")
        return fields
    }

    /// Headers from the token, overridden by headers given now (by name).
    public static func merge(stored: [String], given: [String]) -> [String] {
        let givenNames = Set(given.map { Redact.headerName($0).lowercased() })
        return stored.filter { !givenNames.contains(Redact.headerName($0).lowercased()) } + given
    }
}
