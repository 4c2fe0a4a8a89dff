import Glibc
import NIOHTTP1

/// Where a tus creation (`POST` with `Tus-Resumable`) puts its upload, by the same path rules as every
/// upload (``SafePath``), plus the tus rule that a folder target takes the file's name from its metadata.
enum TusTarget {
    /// The upload's path: `filename` (or `name`) metadata below a folder target, else the target itself.
    /// On S3 (no `root`) a folder is named by its final slash alone.
    static func components(_ head: HTTPRequestHead, root: String?) throws(PathRefusal) -> [String] {
        let target = try SafePath.components(ofTarget: head.uri)
        var type: mode_t?
        if let root {
            do {
                type = try SafePath.fileType(target, root: root)
            } catch {
                throw .forbidden
            }
        }
        let isFolder = head.uri.utf8.prefix { $0 != UInt8(ascii: "?") }.last == UInt8(ascii: "/") || type == S_IFDIR
        guard isFolder else { return target }
        let metadata = TusMetadata.parse(head.headers["upload-metadata"].first)
        // By bytes, as ``SafePath`` splits a request path: a `/` or `.` byte is one whatever follows it.
        guard let name = metadata["filename"] ?? metadata["name"], !name.isEmpty,
            !name.utf8.contains(UInt8(ascii: "/")), name != ".."
        else { throw .malformed }
        guard SafePath.isPlainName(name), target.count < SafePath.maxDepth else { throw .forbidden }
        return target + [name]
    }
}
