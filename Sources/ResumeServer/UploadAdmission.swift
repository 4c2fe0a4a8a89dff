import Glibc
import NIOHTTP1

/// Decides, from an upload's request head alone, whether it may start: before anything is stored,
/// and before NIO promises resumption with a `104`. The sink still enforces the same limits on the
/// bytes that actually arrive (a chunked body announces no length).
struct UploadAdmission: Sendable {
    /// The served folder; `nil` on S3, where an existing object is refused at completion instead
    /// (`If-None-Match: *`) and no free space is asked.
    var root: String?
    var maxUploadSize: Int64?
    var overwrite: Bool
    var slots: UploadSlots?

    struct Refusal: Sendable {
        var status: HTTPResponseStatus
        var headers: [(String, String)] = []
        var reason: String
    }

    /// Seconds a client refused for want of a free upload slot is asked to wait.
    static let retryAfterBusy = 5

    /// - Parameters:
    ///   - components: the upload's path (a creation); `nil` for an append to an existing upload.
    func check(_ head: HTTPRequestHead, components: [String]?) -> Refusal? {
        let headers = head.headers
        let contentLength = FieldValue.integer(headers["content-length"].first)
        let offset = components == nil ? (FieldValue.integer(headers["upload-offset"].first) ?? 0) : 0
        let announced = FieldValue.integer(headers["upload-length"].first) ?? contentLength.map { offset + $0 }
        let isDraft = !headers["upload-draft-interop-version"].isEmpty

        if let limit = maxUploadSize,
            let size = [announced, contentLength.map { offset + $0 }].compactMap({ $0 }).max(), size > limit
        {
            let advertised = isDraft ? [("Upload-Limit", "max-size=\(limit)")] : []
            return Refusal(
                status: .payloadTooLarge, headers: advertised,
                reason: "\(size) bytes, more than --max-upload-size \(limit)")
        }
        if let components, let root {
            // What is there, links not followed: a path through a link is refused before any byte is stored.
            let type: mode_t?
            do {
                type = try SafePath.fileType(components, root: root)
            } catch {
                return Refusal(status: .forbidden, reason: "the path runs through a symbolic link or leaves the folder")
            }
            // A folder there gets its own 409 later.
            if !overwrite, let type, type != S_IFDIR {
                let reason = "a file exists there (serve with --overwrite to replace files)"
                return Refusal(status: .conflict, reason: reason)
            }
        }
        if let announced, let root, let free = Self.freeBytes(root), announced - offset > free {
            return Refusal(
                status: .insufficientStorage, reason: "\(announced - offset) bytes do not fit in the \(free) bytes free"
            )
        }
        return nil
    }

    /// Bytes an unprivileged process may still write on the file system holding `path`.
    static func freeBytes(_ path: String) -> Int64? {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return nil }
        return Int64(info.f_bavail) * Int64(info.f_frsize)
    }
}
