import Dispatch

/// Path helpers on plain strings.
enum Paths {
    /// The folder part of an absolute path (`/` for a top-level entry).
    static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}
