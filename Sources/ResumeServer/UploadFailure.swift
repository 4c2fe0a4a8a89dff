import Glibc
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
