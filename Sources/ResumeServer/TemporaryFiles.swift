#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// The upload temp files that exist right now, so that a shutdown can remove them.
///
/// An unfinished upload's sink lives on an event loop; once the loops have stopped nothing would
/// ever run its cleanup, and NIO keeps upload state only in memory, so the data could never be
/// resumed anyway.
final class TemporaryFiles: Sendable {
    private let open = Mutex<[String: Int32]>([:])

    func register(path: String, descriptor: Int32) {
        open.withLock { $0[path] = descriptor }
    }

    /// Forgets `path`; `false` when `removeAll` has already taken care of it.
    @discardableResult
    func unregister(path: String) -> Bool {
        open.withLock { $0.removeValue(forKey: path) != nil }
    }

    /// Removes the temp files a killed server left under `root` (`.NAME.upload-HEX`): upload state lives
    /// only in memory, so nothing can ever complete them. Returns how many went.
    static func sweep(root: String) -> Int {
        var removed = 0
        var folders = [root]
        while let folder = folders.popLast() {
            guard let dir = opendir(folder) else { continue }
            defer { closedir(dir) }
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
                }
                if name == "." || name == ".." { continue }
                let path = folder + "/" + name
                if entry.pointee.d_type == UInt8(DT_DIR) {
                    folders.append(path)
                } else if entry.pointee.d_type == UInt8(DT_REG), name.hasPrefix("."), name.contains(".upload-") {
                    if unlink(path) == 0 { removed += 1 }
                }
            }
        }
        return removed
    }

    /// Closes and unlinks every file still registered. Call only once no sink can run any more.
    func removeAll() {
        let remaining = open.withLock { files in
            defer { files.removeAll() }
            return files
        }
        for (path, descriptor) in remaining {
            close(descriptor)
            unlink(path)
        }
    }
}
