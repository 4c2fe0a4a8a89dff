import Glibc

/// Path helpers on plain strings.
enum Paths {
    /// The folder part of an absolute path (`/` for a top-level entry).
    static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// `mkdir -p` with `mode`: nil once `dir` is a folder, else the folder that could not be made and why.
    static func makeFolders(_ dir: String, mode: mode_t) -> (folder: String, reason: String)? {
        if mkdir(dir, mode) == 0 || errno == EEXIST {
            return OutputPath.isFolder(dir) ? nil : (dir, "a file is in the way")
        }
        guard errno == ENOENT else { return (dir, String(cString: strerror(errno))) }
        let parent = String(dir[..<(dir.lastIndex(of: "/") ?? dir.startIndex)])
        guard !parent.isEmpty, parent != dir else { return (dir, String(cString: strerror(ENOENT))) }
        if let failed = makeFolders(parent, mode: mode) { return failed }
        return mkdir(dir, mode) == 0 || errno == EEXIST ? nil : (dir, String(cString: strerror(errno)))
    }
}
