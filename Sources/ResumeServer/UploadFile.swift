#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import NIOCore
import NIOPosix

/// Why storing an upload failed, as an HTTP status code.
struct UploadFailure: Error, Sendable {
    var status: Int
    var reason: String

    init(status: Int, _ reason: String) {
        self.status = status
        self.reason = reason
    }

    init(errno code: Int32, doing what: String) {
        let status =
            switch code {
            case ENOSPC, EDQUOT: 507
            case EISDIR, ENOTEMPTY, ENOTDIR, EEXIST: 409
            case EACCES, EPERM, EROFS: 403
            default: 500
            }
        self.init(status: status, "\(what): \(String(cString: strerror(code)))")
    }

    /// Any error from the file operations on the thread pool.
    init(_ error: any Error) {
        switch error {
        case let failure as UploadFailure: self = failure
        case is NIOThreadPoolError.ThreadPoolInactive: self.init(status: 503, "server shutting down")
        default: self.init(status: 500, "\(error)")
        }
    }

    init(_ refusal: PathRefusal) {
        switch refusal {
        case .malformed: self.init(status: 400, "malformed path")
        case .forbidden, .hidden: self.init(status: 403, "path not allowed")
        case .notFound: self.init(status: 404, "not found")
        case .conflict: self.init(status: 409, "path conflicts with an existing file or folder")
        }
    }
}

/// The file an upload is written to: a temporary name beside its destination, renamed into place
/// only once every byte is on disk, so the destination never holds half a file.
///
/// Every method blocks; the sink runs them on the thread pool.
struct UploadFile: Sendable {
    let descriptor: Int32
    let temporaryPath: String
    let finalPath: String

    /// Creates the folders below `root` and the temporary file for an upload to `components`.
    static func create(_ components: [String], root: String) throws(UploadFailure) -> UploadFile {
        let destination: (folder: String, name: String)
        do {
            destination = try SafePath.uploadDestination(components, root: root)
        } catch {
            throw UploadFailure(error)
        }
        var random = SystemRandomNumberGenerator()
        // A dot name: never served, never a valid upload target (SafePath refuses dot names).
        let temporaryName = ".\(shortened(destination.name)).upload-\(String(random.next() as UInt64, radix: 16))"
        let temporaryPath = SafePath.join(destination.folder, [temporaryName])
        let descriptor = open(temporaryPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw UploadFailure(errno: errno, doing: "create \(temporaryName)") }
        return UploadFile(
            descriptor: descriptor,
            temporaryPath: temporaryPath,
            finalPath: SafePath.join(destination.folder, [destination.name])
        )
    }

    /// Writes `buffers` one after another from `offset`.
    func write(_ buffers: [ByteBuffer], at offset: Int64) throws(UploadFailure) {
        var position = off_t(offset)
        for buffer in buffers {
            let failure: Int32? = buffer.withUnsafeReadableBytes { bytes in
                var done = 0
                while done < bytes.count {
                    let n = pwrite(descriptor, bytes.baseAddress! + done, bytes.count - done, position)
                    if n < 0 {
                        if errno == EINTR { continue }
                        return errno
                    }
                    done += n
                    position += off_t(n)
                }
                return nil
            }
            if let failure { throw UploadFailure(errno: failure, doing: "write") }
        }
    }

    /// Makes the data durable, then gives it its final name; a file already there is replaced only
    /// when `replacing`, else the upload fails with 409 and that file stays as it was.
    func commit(replacing: Bool) throws(UploadFailure) {
        // Without the fsync a crash after the rename could leave the final name on a short file.
        if fsync(descriptor) != 0 {
            let code = errno
            discard()
            throw UploadFailure(errno: code, doing: "fsync")
        }
        close(descriptor)
        if replacing {
            if rename(temporaryPath, finalPath) != 0 {
                let code = errno
                unlink(temporaryPath)
                throw UploadFailure(errno: code, doing: "rename")
            }
            return
        }
        // link(2) fails with EEXIST instead of replacing: no window in which a file that appeared
        // since the upload began would be overwritten (rename(2) has no such mode).
        if link(temporaryPath, finalPath) != 0 {
            let code = errno
            unlink(temporaryPath)
            throw code == EEXIST
                ? UploadFailure(status: 409, "a file exists there (serve with --overwrite to replace files)")
                : UploadFailure(errno: code, doing: "link")
        }
        unlink(temporaryPath)
    }

    func discard() {
        close(descriptor)
        unlink(temporaryPath)
    }

    /// Keeps temporary names within the usual 255-byte limit of a file name.
    private static func shortened(_ name: String) -> String {
        var result = Substring(name)
        while result.utf8.count > 200 { result.removeLast() }
        return String(result)
    }
}
