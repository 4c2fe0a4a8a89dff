/// The INI dialect of `~/.aws/credentials` and `~/.aws/config`: `[section]` headers, `key = value` lines,
/// `#`/`;` comments. Indented lines continue a nested setting (`s3 =` blocks) and are not ours to read.
struct ProfileFile: Equatable {
    var sections: [String: [String: String]]

    init(_ text: String) {
        var sections: [String: [String: String]] = [:]
        var current: String?
        for raw in text.split(omittingEmptySubsequences: true, whereSeparator: { $0 == "\n" || $0 == "\r" }) {
            if raw.first == " " || raw.first == "\t" { continue }
            let line = raw.trimmingSpaces()
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("["), line.hasSuffix("]") {
                let name = String(line.dropFirst().dropLast()).trimmingSpaces()
                // `[profile  x]` and `[profile x]` name the same profile.
                let words = name.split(separator: " ", omittingEmptySubsequences: true)
                current = words.joined(separator: " ")
                if sections[current!] == nil { sections[current!] = [:] }
                continue
            }
            guard let section = current, let equals = line.firstIndex(of: "=") else { continue }
            let key = String(line[..<equals]).trimmingSpaces().lowercased()
            let value = String(line[line.index(after: equals)...]).trimmingSpaces()
            sections[section]![key] = value
        }
        self.sections = sections
    }
}
