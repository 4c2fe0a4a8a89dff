import Foundation
import Glibc

/// Where a download's file goes: `-o PATH`, or the URL's last path segment in the current folder.
enum OutputPath {
    static func resolve(url: String, output: String?) throws(TransferError) -> String {
        let cwd = FileManager.default.currentDirectoryPath
        var path = output.map { $0.hasPrefix("/") ? $0 : cwd + "/" + $0 } ?? cwd + "/" + defaultName(url: url)
        var isDir: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDir), isDir.boolValue {
            if output?.hasSuffix("/") == true || output != nil {
                path = path + "/" + defaultName(url: url)
            }
        }
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
        if let scheme = rest.range(of: "://") { rest = rest[scheme.upperBound...] }
        rest = rest.prefix { $0 != "?" && $0 != "#" }
        guard let slash = rest.firstIndex(of: "/") else { return "index.html" }
        let path = rest[slash...]
        let last = path.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? ""
        let decoded = (last.removingPercentEncoding ?? last).replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "\u{0}", with: "_")
        if decoded.isEmpty || decoded == "." || decoded == ".." { return "index.html" }
        return decoded
    }

    /// The folder must exist and take new files; checked before any byte is fetched.
    static func checkWritable(_ path: String) throws(TransferError) {
        let dir = (path as NSString).deletingLastPathComponent
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: dir, isDirectory: &isDir), isDir.boolValue else {
            throw TransferError(.cannotCreateOutput, "cannot create \(path): folder \(dir) does not exist")
        }
        guard access(dir, W_OK | X_OK) == 0 else {
            throw TransferError(.cannotCreateOutput, "cannot create \(path): folder \(dir) is not writable")
        }
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDir), isDir.boolValue {
            throw TransferError(.cannotCreateOutput, "cannot create \(path): a folder is in the way")
        }
    }
}
