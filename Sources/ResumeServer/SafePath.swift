#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a request path cannot be served or written.
enum PathRefusal: Error, Equatable, Sendable {
    /// Not a path this server can decode (bad percent-encoding, not UTF-8, not origin-form).
    case malformed
    /// Would leave the served folder, or names a NUL byte, or the file system said no.
    case forbidden
    /// A dot-file or dot-folder: never served (keeps `.git`, `.ssh` and our own upload temp files private).
    case hidden
    case notFound
    /// An upload whose path runs into a file where a folder is needed, or onto a folder.
    case conflict
}

/// Turns request targets into file-system paths that can never leave the served folder.
///
/// Two stages: a lexical one (decode, split, refuse `..`), then a file-system one that resolves
/// symbolic links and checks the result is still inside the folder's own canonical path.
enum SafePath {
    /// The decoded path components of a request target, relative to the served folder.
    ///
    /// `..` is refused rather than resolved, so `/a/../b` is an error even though it stays inside.
    static func components(ofTarget target: String) throws(PathRefusal) -> [String] {
        let bytes = try percentDecoded(pathPart(of: target))
        guard !bytes.contains(0) else { throw .forbidden }
        if bytes.allSatisfy({ $0 < 0x80 }) { return try asciiComponents(bytes) }
        guard let decoded = String(validating: bytes, as: UTF8.self) else { throw .malformed }

        var components: [String] = []
        for component in decoded.split(separator: "/", omittingEmptySubsequences: true) {
            switch component {
            case ".": continue
            case "..": throw .forbidden
            default:
                if component.hasPrefix(".") { throw .hidden }
                components.append(String(component))
            }
        }
        return components
    }

    /// The path of a request target, without query or fragment, still percent-encoded.
    private static func pathPart(of target: String) throws(PathRefusal) -> Substring.UTF8View {
        // An ASCII target in origin-form (what clients send) by bytes: there every Character is one byte
        // but CR LF, which is neither `/`, `?` nor `#`, so the cut is where the Characters below make it,
        // without breaking the target into Characters first (half of this function's instructions).
        let utf8 = Substring(target).utf8
        if utf8.first == UInt8(ascii: "/") && utf8.allSatisfy({ $0 < 0x80 }) {
            return utf8[..<(utf8.firstIndex { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? utf8.endIndex)]
        }
        var path = Substring(target)
        if !path.hasPrefix("/") {
            // absolute-form (RFC 9112 §3.2.2): keep only the path.
            let lower = path.lowercased()
            guard lower.hasPrefix("http://") || lower.hasPrefix("https://") else { throw .malformed }
            let afterScheme = path[path.index(path.firstIndex(of: ":")!, offsetBy: 3)...]
            path = afterScheme.firstIndex(of: "/").map { afterScheme[$0...] } ?? "/"
        }
        if let end = path.firstIndex(where: { $0 == "?" || $0 == "#" }) {
            path = path[..<end]
        }
        return path.utf8
    }

    /// ``components(ofTarget:)`` of a decoded path that is all ASCII, by bytes: there every Character
    /// is one byte (CR LF aside, which holds no `/` and no `.`), so splitting and comparing bytes
    /// finds exactly what splitting and comparing Characters finds, in a tenth of the instructions.
    private static func asciiComponents(_ bytes: [UInt8]) throws(PathRefusal) -> [String] {
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
            components.append(String(decoding: component, as: UTF8.self))
        }
        return components
    }

    /// The canonical path of an existing file below `root` (itself canonical).
    static func existing(_ components: [String], root: String) throws(PathRefusal) -> String {
        let joined = join(root, components)
        guard let resolved = canonical(joined) else {
            throw errno == EACCES ? .forbidden : .notFound
        }
        guard let relative = relativePath(of: resolved, inside: root) else { throw .forbidden }
        // A link inside the folder may still point at one of its hidden files.
        if relative.split(separator: "/").contains(where: { $0.hasPrefix(".") }) { throw .hidden }
        return resolved
    }

    /// The folder (canonical, created if needed) and file name an upload to `components` lands in.
    static func uploadDestination(
        _ components: [String],
        root: String
    ) throws(PathRefusal) -> (folder: String, name: String) {
        guard let name = components.last else { throw .conflict }
        var folder = root
        for component in components.dropLast() {
            let candidate = join(folder, [component])
            var info = stat()
            if lstat(candidate, &info) != 0 {
                guard errno == ENOENT else { throw .forbidden }
                if mkdir(candidate, 0o755) != 0 && errno != EEXIST { throw .forbidden }
                // Re-examine: a concurrent upload may have created it, or something else did.
                guard lstat(candidate, &info) == 0 else { throw .forbidden }
            }
            switch info.st_mode & S_IFMT {
            case S_IFDIR:
                folder = candidate
            case S_IFLNK:
                guard let target = canonical(candidate), relativePath(of: target, inside: root) != nil else {
                    throw .forbidden
                }
                var targetInfo = stat()
                guard stat(target, &targetInfo) == 0, targetInfo.st_mode & S_IFMT == S_IFDIR else { throw .conflict }
                folder = target
            default:
                throw .conflict
            }
        }
        var info = stat()
        if lstat(join(folder, [name]), &info) == 0, info.st_mode & S_IFMT == S_IFDIR {
            throw .conflict
        }
        return (folder, name)
    }

    /// `realpath(3)`; `nil` with `errno` set when the path does not resolve.
    static func canonical(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// `path` relative to `root` when it is `root` itself or below it; both canonical.
    static func relativePath(of path: String, inside root: String) -> String? {
        if path == root { return "" }
        let prefix = root.hasSuffix("/") ? root : root + "/"
        guard path.hasPrefix(prefix) else { return nil }
        return String(path.dropFirst(prefix.count))
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
