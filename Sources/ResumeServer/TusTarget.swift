#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import NIOHTTP1

/// Where a tus creation (`POST` with `Tus-Resumable`) puts its upload, by the same path rules as every
/// upload (``SafePath``), plus the tus rule that a folder target takes the file's name from its metadata.
enum TusTarget {
    /// Why a creation's target is refused.
    struct Refusal: Error {
        var status: HTTPResponseStatus
        init(_ status: HTTPResponseStatus) { self.status = status }
    }

    /// The upload's path: `filename` (or `name`) metadata below a folder target, else the target itself.
    /// On S3 (no `root`) a folder is named by its final slash alone.
    static func components(_ head: HTTPRequestHead, root: String?) throws(Refusal) -> [String] {
        let target: [String]
        do {
            target = try SafePath.components(ofTarget: head.uri)
        } catch {
            throw Refusal(error == .malformed ? .badRequest : .forbidden)
        }
        var info = stat()
        let path = root.map { SafePath.join($0, target) }
        let isFolder = head.uri.prefix { $0 != "?" }.hasSuffix("/") || (path.map { stat($0, &info) == 0 } == true && info.st_mode & S_IFMT == S_IFDIR)
        guard isFolder else { return target }
        let metadata = TusMetadata.parse(head.headers["upload-metadata"].first)
        guard let name = metadata["filename"] ?? metadata["name"], !name.isEmpty, !name.contains("/"), name != ".."
        else { throw Refusal(.badRequest) }
        guard !name.hasPrefix("."), !name.contains("\0") else { throw Refusal(.forbidden) }
        return target + [name]
    }
}
