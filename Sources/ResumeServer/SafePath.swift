import Glibc

/// Why a request path cannot be served or written.
enum PathRefusal: Error, Equatable, Sendable {
    /// Not a path this server can decode (bad percent-encoding, not UTF-8, not origin-form).
    case malformed
    /// Would leave the served folder, names a NUL byte, runs through a symbolic link, is deeper than
    /// ``SafePath/maxDepth``, or the file system said no.
    case forbidden
    /// A dot-file or dot-folder: never served (keeps `.git`, `.ssh` and our own upload temp files private).
    case hidden
    case notFound
    /// An upload whose path runs into a file where a folder is needed, or onto a folder.
    case conflict
}

/// Turns request targets into file-system paths that can never leave the served folder.
///
/// Two stages: a lexical one here (decode, split, refuse `..`, dot-names and depth), by bytes as the
/// kernel reads a path; then a file-system one (SafePath+Beneath.swift) that opens every component
/// relative to the served folder and never follows a symbolic link.
enum SafePath {
    /// The most components a request path may have. Deeper paths are refused before anything is
    /// looked up or created, so a hostile upload cannot leave thousands of folders behind.
    static let maxDepth = 64

    /// The decoded path components of a request target, relative to the served folder.
    ///
    /// Split at every `/` byte and judged by first bytes, as the kernel reads the path: a `/` or `.`
    /// followed by a combining mark is still a separator or a dot-name to it. `..` is refused
    /// rather than resolved, so `/a/../b` is an error even though it stays inside.
    static func components(ofTarget target: String) throws(PathRefusal) -> [String] {
        let bytes = try percentDecoded(pathPart(of: target))
        guard !bytes.contains(0) else { throw .forbidden }
        // `/` is ASCII and never part of a longer UTF-8 sequence: the pieces are valid when the whole is.
        if !bytes.allSatisfy({ $0 < 0x80 }) && String(validating: bytes, as: UTF8.self) == nil { throw .malformed }
        let slash = UInt8(ascii: "/"), dot = UInt8(ascii: ".")
        var components: [String] = []
        var start = 0
        while start < bytes.count {
            var end = start
            while end < bytes.count && bytes[end] != slash { end += 1 }
            let component = bytes[start..<end]
            start = end + 1
            guard let first = component.first else { continue }
            if first == dot {
                if component.count == 1 { continue }
                if component.count == 2 && component.last == dot { throw .forbidden }
                throw .hidden
            }
            guard components.count < maxDepth else { throw .forbidden }
            components.append(String(decoding: component, as: UTF8.self))
        }
        return components
    }

    /// Whether `name` may be one component of a path below the served folder, by the rules of
    /// ``components(ofTarget:)``: not empty, no `/` or NUL byte, not starting with a `.` byte.
    static func isPlainName(_ name: String) -> Bool {
        let bytes = name.utf8
        guard let first = bytes.first, first != UInt8(ascii: ".") else { return false }
        return !bytes.contains(UInt8(ascii: "/")) && !bytes.contains(0)
    }

    /// The path of a request target, without query or fragment, still percent-encoded. By bytes: `?`,
    /// `#` and `/` are ASCII, so a byte with their value is always that character in UTF-8.
    private static func pathPart(of target: String) throws(PathRefusal) -> Substring.UTF8View {
        let utf8 = Substring(target).utf8
        let slash = UInt8(ascii: "/"), question = UInt8(ascii: "?"), hash = UInt8(ascii: "#")
        var start = utf8.startIndex
        if utf8.first != slash {
            // absolute-form (RFC 9112 §3.2.2): keep only the path, which starts at the authority's end.
            guard let scheme = ["http://", "https://"].first(where: { hasPrefixIgnoringCase(utf8, $0) }) else {
                throw .malformed
            }
            let authority = utf8.index(utf8.startIndex, offsetBy: scheme.utf8.count)
            start = utf8[authority...].firstIndex { $0 == slash || $0 == question || $0 == hash } ?? utf8.endIndex
            guard start < utf8.endIndex, utf8[start] == slash else { return Substring("/").utf8 }
        }
        let end = utf8[start...].firstIndex { $0 == question || $0 == hash } ?? utf8.endIndex
        return utf8[start..<end]
    }

    private static func hasPrefixIgnoringCase(_ utf8: Substring.UTF8View, _ prefix: String) -> Bool {
        guard utf8.count >= prefix.utf8.count else { return false }
        let letters = UInt8(ascii: "a")...UInt8(ascii: "z")
        return zip(utf8, prefix.utf8).allSatisfy { letters.contains($1) ? $0 | 0x20 == $1 : $0 == $1 }
    }

    /// `realpath(3)`; `nil` with `errno` set when the path does not resolve.
    static func canonical(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// `path` relative to `root` when it is `root` itself or below it; both canonical. By bytes: a name
    /// starting with a combining mark makes one Character of the `/` before it.
    static func relativePath(of path: String, inside root: String) -> String? {
        if path.utf8.elementsEqual(root.utf8) { return "" }
        let prefix = root.hasSuffix("/") ? root : root + "/"
        guard path.utf8.starts(with: prefix.utf8) else { return nil }
        return String(path.utf8.dropFirst(prefix.utf8.count))
    }

    static func join(_ root: String, _ components: [String]) -> String {
        guard !components.isEmpty else { return root }
        return (root.hasSuffix("/") ? root : root + "/") + components.joined(separator: "/")
    }

    private static func percentDecoded(_ utf8: Substring.UTF8View) throws(PathRefusal) -> [UInt8] {
        var result: [UInt8] = []
        result.reserveCapacity(utf8.count)
        var iterator = utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                result.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                throw .malformed
            }
            result.append(high << 4 | low)
        }
        return result
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
