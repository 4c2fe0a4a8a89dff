/// The `-i LIST` file of `resumectl download`: one URL a line, optionally followed by whitespace and an
/// output name. Blank lines and `#` comments are skipped; a URL given twice for one name is fetched once.
public struct DownloadList: Sendable, Equatable {
    public struct Entry: Sendable, Equatable {
        public var line: Int
        public var url: String
        /// Output name inside the list's folder; nil for the URL's own name.
        public var name: String?
    }

    public struct Problem: Sendable, Equatable, CustomStringConvertible {
        public var line: Int
        public var message: String
        public var description: String { "line \(line): \(message)" }
    }

    public var entries: [Entry] = []
    public var problems: [Problem] = []
    /// Lines dropped as repeats of an earlier line.
    public var duplicates: [Int] = []

    public init(parsing text: String) {
        var seen: Set<String> = []
        // Split on bytes: Character-wise splitting showed in profiles of long lists.
        for (i, raw) in text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated() {
            let line = Substring(raw).trimmingSpaces()
            if line.isEmpty || line.hasPrefix("#") { continue }
            let parts = line.utf8.split(whereSeparator: {
                $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") || $0 == UInt8(ascii: "\r")
            })
            // A line of a CR alone (a blank line of a CRLF file) has no part at all (found by FuzzDownloadList).
            guard let first = parts.first else { continue }
            let url = String(Substring(first))
            let name = parts.count > 1 ? parts[1...].map { String(Substring($0)) }.joined(separator: " ") : nil
            do throws(TransferError) { try URLCheck.validate(url) } catch {
                problems.append(Problem(line: i + 1, message: error.message))
                continue
            }
            if let name, name.contains("/") || name == "." || name == ".." {
                problems.append(Problem(line: i + 1, message: "output name '\(name)' must be a plain file name"))
                continue
            }
            let key = url + "\u{0}" + (name ?? OutputPath.defaultName(url: url))
            if !seen.insert(key).inserted {
                duplicates.append(i + 1)
                continue
            }
            entries.append(Entry(line: i + 1, url: url, name: name))
        }
    }
}
