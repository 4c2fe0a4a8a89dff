#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
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
        let contentLength = Self.integer(headers["content-length"].first)
        let offset = components == nil ? (Self.integer(headers["upload-offset"].first) ?? 0) : 0
        let announced = Self.integer(headers["upload-length"].first) ?? contentLength.map { offset + $0 }
        let isDraft = !headers["upload-draft-interop-version"].isEmpty

        if let limit = maxUploadSize, let size = [announced, contentLength.map { offset + $0 }].compactMap({ $0 }).max(), size > limit {
            let advertised = isDraft ? [("Upload-Limit", "max-size=\(limit)")] : []
            return Refusal(status: .payloadTooLarge, headers: advertised, reason: "\(size) bytes, more than --max-upload-size \(limit)")
        }
        if let components, !overwrite, let root, Self.exists(SafePath.join(root, components)) {
            return Refusal(status: .conflict, reason: "a file exists there (serve with --overwrite to replace files)")
        }
        if let announced, let root, let free = Self.freeBytes(root), announced - offset > free {
            return Refusal(status: .insufficientStorage, reason: "\(announced - offset) bytes do not fit in the \(free) bytes free")
        }
        if components != nil, let slots, slots.isFull {
            return Refusal(
                status: .serviceUnavailable,
                headers: [("Retry-After", "\(Self.retryAfterBusy)")],
                reason: "\(slots.limit) uploads in progress (--max-uploads)"
            )
        }
        return nil
    }

    /// A non-negative decimal (Content-Length, or a structured-field integer such as Upload-Length).
    static func integer(_ value: String?) -> Int64? {
        guard let value, !value.isEmpty, value.utf8.count <= 18, value.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else {
            return nil
        }
        return Int64(value)
    }

    /// Bytes an unprivileged process may still write on the file system holding `path`.
    static func freeBytes(_ path: String) -> Int64? {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return nil }
        return Int64(info.f_bavail) * Int64(info.f_frsize)
    }

    /// Whether something that is not a folder is at `path` (a folder gets its own 409 later).
    private static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && info.st_mode & S_IFMT != S_IFDIR
    }
}
