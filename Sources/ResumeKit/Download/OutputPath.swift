import FoundationEssentials
import Glibc

/// Where a download's file goes: `-o PATH`, or the URL's last path segment in the current folder.
public enum OutputPath {
    /// Makes `path` and the folders above it that are missing (`mkdir -p`).
    public static func makeFolders(_ path: some StringProtocol) throws(TransferError) {
        if let (folder, reason) = Paths.makeFolders(String(path), mode: 0o755) {
            throw TransferError(.cannotCreateOutput, "cannot create \(folder): \(reason)")
        }
    }

    static func resolve(url: String, output: String?) -> String {
        let name = output ?? defaultName(url: url)  // never absolute: a URL's name has no slash
        var path = name.hasPrefix("/") ? name : FileManager.default.currentDirectoryPath + "/" + name
        if output?.hasSuffix("/") == true {
            path += defaultName(url: url)
        } else if isFolder(path) {
            path += "/" + defaultName(url: url)
        }
        return lexicallyNormalized(path)
    }

    /// `path` from the current folder, normalized as below.
    public static func absolute(_ path: String) -> String {
        lexicallyNormalized(path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path)
    }

    /// `.` and `..` and repeated slashes resolved on the text alone: no symlink look-ups per file.
    static func lexicallyNormalized(_ path: String) -> String {
        if isNormalized(path) { return path }
        var parts: [Substring] = []
        for part in path.split(separator: "/") {
            if part == "." { continue }
            if part == ".." { if !parts.isEmpty { parts.removeLast() }; continue }
            parts.append(part)
        }
        return "/" + parts.joined(separator: "/")
    }

    /// Absolute, with no empty, `.` or `..` segment and no trailing slash: nothing to resolve.
    private static func isNormalized(_ path: String) -> Bool {
        let bytes = path.utf8
        guard bytes.first == UInt8(ascii: "/"), bytes.count > 1, bytes.last != UInt8(ascii: "/") else {
            return path == "/"
        }
        var segment = 0  // length of the segment so far
        var dots = 0  // how many of its bytes are dots
        for byte in bytes.dropFirst() {
            if byte == UInt8(ascii: "/") {
                if segment == 0 || segment == dots && dots <= 2 { return false }
                segment = 0
                dots = 0
            } else {
                segment += 1
                if byte == UInt8(ascii: ".") { dots += 1 }
            }
        }
        return !(segment == dots && dots <= 2)
    }

    /// The last path segment, percent-decoded; `index.html` when there is none. Never a path.
    public static func defaultName(url: String) -> String {
        var rest = url.utf8[...]
        // After "scheme://" (a plain scan: the generic firstRange(of:) showed in profiles of long lists).
        if let colon = rest.firstIndex(of: UInt8(ascii: ":")), rest[colon...].starts(with: "://".utf8) {
            rest = rest[rest.index(colon, offsetBy: 3)...]
        }
        rest = rest.prefix { $0 != UInt8(ascii: "?") && $0 != UInt8(ascii: "#") }
        guard rest.contains(UInt8(ascii: "/")) else { return "index.html" }
        let last =
            rest.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).last ?? rest[rest.endIndex...]
        var name = String(decoding: last, as: UTF8.self)
        if last.contains(UInt8(ascii: "%")) {
            name = String(percentDecoded(name).map { $0 == "/" || $0 == "\u{0}" ? "_" : $0 })
        }
        if name.isEmpty || name == "." || name == ".." { return "index.html" }
        return name
    }

    /// `%XX` escapes decoded as UTF-8; a malformed escape is kept as it is.
    static func percentDecoded(_ text: String) -> String {
        guard text.contains("%") else { return text }
        var bytes: [UInt8] = []
        var utf8 = Array(text.utf8)[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "%"), utf8.count >= 2,
                let value = UInt8(String(decoding: utf8.prefix(2), as: UTF8.self), radix: 16)
            {
                bytes.append(value)
                utf8 = utf8.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The folder must exist and take new files; checked before any byte is fetched.
    static func checkWritable(_ path: String, occupant: Occupant) throws(TransferError) {
        func refusal(_ why: String) -> TransferError { .init(.cannotCreateOutput, "cannot create \(path): \(why)") }
        if occupant == .folder { throw refusal("a folder is in the way") }
        let dir = Paths.parent(of: path)
        guard isFolder(dir) else { throw refusal("folder \(dir) does not exist") }
        guard access(dir, W_OK | X_OK) == 0 else { throw refusal("folder \(dir) is not writable") }
    }

    enum Occupant { case nothing, file, folder }

    /// What is at `path` now (following links), in one `stat`.
    static func occupant(_ path: String) -> Occupant {
        var st = stat()
        guard stat(path, &st) == 0 else { return .nothing }
        return (st.st_mode & S_IFMT) == S_IFDIR ? .folder : .file
    }

    static func isFolder(_ path: String) -> Bool { occupant(path) == .folder }
}
