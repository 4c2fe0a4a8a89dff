import FoundationEssentials
import Glibc

/// Where a download's file goes: `-o PATH`, or the URL's last path segment in the current folder.
enum OutputPath {
    static func resolve(url: String, output: String?) throws(TransferError) -> String {
        let cwd = FileManager.default.currentDirectoryPath
        var path = output.map { $0.hasPrefix("/") ? $0 : cwd + "/" + $0 } ?? cwd + "/" + defaultName(url: url)
        if isFolder(path) { path = path + "/" + defaultName(url: url) }
        return lexicallyNormalized(path)
    }

    /// `.` and `..` and repeated slashes resolved on the text alone: no symlink look-ups per file.
    static func lexicallyNormalized(_ path: String) -> String {
        var parts: [Substring] = []
        for part in path.split(separator: "/") {
            if part == "." { continue }
            if part == ".." { if !parts.isEmpty { parts.removeLast() }; continue }
            parts.append(part)
        }
        return "/" + parts.joined(separator: "/")
    }

    /// The last path segment, percent-decoded; `index.html` when there is none. Never a path.
    static func defaultName(url: String) -> String {
        var rest = Substring(url)
        if let scheme = rest.firstRange(of: "://") { rest = rest[scheme.upperBound...] }
        rest = rest.prefix { $0 != "?" && $0 != "#" }
        guard let slash = rest.firstIndex(of: "/") else { return "index.html" }
        let path = rest[slash...]
        let last = path.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? ""
        let decoded = String(percentDecoded(last).map { $0 == "/" || $0 == "\u{0}" ? "_" : $0 })
        if decoded.isEmpty || decoded == "." || decoded == ".." { return "index.html" }
        return decoded
    }

    /// `%XX` escapes decoded as UTF-8; a malformed escape is kept as it is.
    static func percentDecoded(_ text: String) -> String {
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
    static func checkWritable(_ path: String) throws(TransferError) {
        let dir = Paths.parent(of: path)
        guard isFolder(dir) else {
            throw TransferError(.cannotCreateOutput, "cannot create \(path): folder \(dir) does not exist")
        }
        guard access(dir, W_OK | X_OK) == 0 else {
            throw TransferError(.cannotCreateOutput, "cannot create \(path): folder \(dir) is not writable")
        }
        if isFolder(path) {
            throw TransferError(.cannotCreateOutput, "cannot create \(path): a folder is in the way")
        }
    }

    static func isFolder(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR
    }
}
