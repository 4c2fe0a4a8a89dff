/// A published list of SHA-256 sums (`--checksum-file`): `sha256sum`'s lines (`HEX  NAME`, `HEX *NAME`, a
/// leading `\` when the name is escaped) and BSD lines (`SHA256 (NAME) = HEX`, as `sha256sum --tag` and
/// `shasum -a 256 --tag` write). Lines of other algorithms or shapes are counted, not used.
public struct ChecksumFile: Sendable, Equatable {
    /// Lowercase hex digest by the name as listed (without a leading `./`).
    public private(set) var sums: [String: String] = [:]
    /// Lines that name no SHA-256 sum (another algorithm, a short digest, prose).
    public private(set) var skipped = 0
    /// Digest by a listed name's last component, `nil` when two entries share it.
    private var byFileName: [String: String?] = [:]

    /// - Throws: `badListing` (exit 65) when no line carries a SHA-256 sum.
    public init(parsing text: String) throws(TransferError) {
        for raw in text.split(whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            let line = raw.hasSuffix("\r") ? raw.dropLast() : raw[...]
            if line.allSatisfy({ $0 == " " || $0 == "\t" }) || line.hasPrefix("#") { continue }
            guard let (name, digest) = Self.bsd(line) ?? Self.gnu(line), !name.isEmpty else {
                skipped += 1
                continue
            }
            let listed = name.hasPrefix("./") ? String(name.dropFirst(2)) : name
            sums[listed] = digest
            let fileName = String(listed.split(separator: "/").last ?? Substring(listed))
            byFileName[fileName] = byFileName[fileName] == nil ? digest : .some(nil)
        }
        guard !sums.isEmpty else { throw TransferError(.badListing, "it lists no SHA-256 sum") }
    }

    /// The sum for the file at `path` (relative, `/`-separated): its own entry, else the one entry whose
    /// name ends in the same file name.
    public func sha256(for path: String) -> String? {
        let relative = path.hasPrefix("./") ? String(path.dropFirst(2)) : path
        if let digest = sums[relative] { return digest }
        let fileName = String(relative.split(separator: "/").last ?? Substring(relative))
        return byFileName[fileName] ?? nil
    }

    /// The line that says a file is fetched unchecked: the list at `location` does not name it.
    public static func unlisted(_ name: String, in location: String) -> String {
        "\(location) lists no sum for \(name): it is not checked"
    }

    /// The line that says how many lines of the list at `location` were not used; nil when none.
    public func skippedNote(_ location: String) -> String? {
        skipped > 0 ? "\(location): \(skipped) line(s) carry no SHA-256 sum, not used" : nil
    }

    /// `HEX  NAME` or `HEX *NAME`; a leading `\` says the name has `\\` and `\n` escaped.
    private static func gnu(_ line: Substring) -> (String, String)? {
        let escaped = line.hasPrefix("\\")
        let body = escaped ? line.dropFirst() : line
        let digest = body.prefix(64)
        let rest = body.dropFirst(64)
        guard isDigest(digest), rest.hasPrefix(" *") || rest.hasPrefix("  ") else { return nil }
        let name = String(rest.dropFirst(2))
        return (escaped ? unescaped(name) : name, digest.lowercased())
    }

    /// `SHA256 (NAME) = HEX`.
    private static func bsd(_ line: Substring) -> (String, String)? {
        let digest = line.suffix(64)
        let before = line.dropLast(64)
        guard line.hasPrefix("SHA256 ("), before.hasSuffix(") = "), before.count >= 12, isDigest(digest) else {
            return nil
        }
        return (String(before.dropFirst(8).dropLast(4)), digest.lowercased())
    }

    private static func isDigest(_ text: Substring) -> Bool {
        text.utf8.count == 64
            && text.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x66) }
    }

    private static func unescaped(_ name: String) -> String {
        var out = ""
        var pending = false
        for character in name {
            if pending {
                out.append(character == "n" ? "\n" : character)
                pending = false
            } else if character == "\\" {
                pending = true
            } else {
                out.append(character)
            }
        }
        return out
    }
}
