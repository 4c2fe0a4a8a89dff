import Glibc

/// The files of a batch: every regular file below the folder, by path relative to it (sorted, so every run
/// of the same batch sees the same order), and one line for each entry left out.
struct BatchTree: Sendable, Equatable {
    struct File: Sendable, Equatable {
        /// Below the folder, with `/`.
        var relative: String
        var path: String
        var size: Int64
        /// What tells a finished file from one changed since: size, mtime (ns) and inode.
        var stamp: BatchLedger.Stamp
    }

    var files: [File] = []
    /// Symbolic links (without `-L`) and special files: one line each.
    var skipped: [String] = []
    /// Names no key or URL path can carry: one line each.
    var refused: [String] = []
    /// False when a folder below the root could not be read: its files are missing, not gone.
    var complete = true

    var bytes: Int64 { files.reduce(0) { $0 + $1.size } }

    /// Walks `root`. With `follow`, links are followed (each real folder once, so a loop ends).
    init(root: String, follow: Bool) throws(TransferError) {
        var seen: Set<[UInt64]> = []
        try walk(root, relative: "", follow: follow, seen: &seen)
        files.sort { $0.relative < $1.relative }
    }

    private mutating func walk(_ dir: String, relative: String, follow: Bool, seen: inout Set<[UInt64]>)
        throws(TransferError)
    {
        var st = stat()
        guard stat(dir, &st) == 0, let handle = opendir(dir) else {
            let reason = String(cString: strerror(errno))
            if relative.isEmpty { throw TransferError(.inputMissing, "cannot read \(dir): \(reason)") }
            skipped.append("\(dir): skipped, cannot read it (\(reason))")
            complete = false
            return
        }
        defer { closedir(handle) }
        guard seen.insert([UInt64(st.st_dev), UInt64(st.st_ino)]).inserted else {
            skipped.append("\(dir): skipped, a link back to a folder already sent")
            return
        }
        while let entry = readdir(handle) {
            let raw = withUnsafeBytes(of: entry.pointee.d_name) { Array($0.prefix(while: { $0 != 0 })) }
            if raw == [46] || raw == [46, 46] { continue }
            let path = dir + "/" + String(decoding: raw, as: UTF8.self)
            guard let name = BatchNaming.name(raw) else {
                refused.append(
                    "\(path): refused, its name cannot be a key or a URL path (not UTF-8, or a control character)")
                continue
            }
            let child = relative.isEmpty ? name : relative + "/" + name
            var info = stat()
            guard lstat(path, &info) == 0 else { continue }  // gone meanwhile
            // A link is followed with -L (`info` then describes its target).
            if info.st_mode & S_IFMT == S_IFLNK, !follow || stat(path, &info) != 0 {
                let why = follow ? "a link to nothing" : "a symbolic link (-L follows links)"
                skipped.append("\(path): skipped, \(why)")
                continue
            }
            switch info.st_mode & S_IFMT {
            case S_IFDIR:
                try walk(path, relative: child, follow: follow, seen: &seen)
            case S_IFREG:
                guard BatchNaming.fits(child) else {
                    refused.append("\(path): refused, its path is longer than a key can be (1,024 bytes)")
                    continue
                }
                files.append(
                    File(relative: child, path: path, size: Int64(info.st_size), stamp: BatchLedger.Stamp(info)))
            default:
                skipped.append("\(path): skipped, not a regular file")
            }
        }
    }
}
