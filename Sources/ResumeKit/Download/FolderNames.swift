import Glibc
import Synchronization

/// The names in a list's output folders, read once a folder: what the small-file pass asks of each file's
/// path (is the file there, or a `.part` of it) without two path lookups per file, each under the lock of the
/// folder that the pass's lanes create and link in. A folder much larger than the list is not read: its files
/// are looked up one by one. A name that appears after the reading is another program's (a resumectl download
/// claims its path first, see OutputLocks): a rename would replace it; the pass's link fails and says so.
final class FolderNames: Sendable {
    /// A folder is read when its entries take up to this many bytes (about 50 a name on ext4), else looked up.
    private let readLimit: Int
    private let folders = Mutex<[String: Set<String>?]>([:])

    /// - Parameter readLimit: the largest folder read (bytes of entries); by default 64 KiB, or 512 bytes a file.
    init(files: Int, readLimit: Int? = nil) {
        self.readLimit = readLimit ?? max(64 << 10, files * 512)
    }

    /// Takes the path for one file of this list: true when neither it nor its `.part` is there (and no file
    /// of this list took it before); the caller then holds its claim.
    func take(_ path: String) -> Bool {
        guard let slash = path.lastIndex(of: "/") else { return false }
        let folder = Paths.parent(of: path)
        let name = String(path[path.index(after: slash)...])
        return folders.withLock { known in
            if known.index(forKey: folder) == nil { known.updateValue(read(folder), forKey: folder) }
            guard known[folder] != .some(nil) else {
                return OutputPath.occupant(path) == .nothing && access(path + ".part", F_OK) != 0 && errno == ENOENT
            }
            return known[folder]!!.insert(name).inserted
        }
    }

    /// The folder's names, and for each `.part` the name it is of (taken as well); nil when the folder is too
    /// large to read for this list, or cannot be read (the look-ups then say what is wrong).
    private func read(_ folder: String) -> Set<String>? {
        guard let dir = opendir(folder) else { return nil }
        defer { closedir(dir) }
        var st = stat()
        guard fstat(dirfd(dir), &st) == 0, st.st_size <= readLimit else { return nil }
        var names: Set<String> = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
            if name.utf8.count > 5, name.hasSuffix(".part") { names.insert(String(name.dropLast(5))) }
            names.insert(name)
        }
        return names
    }
}
