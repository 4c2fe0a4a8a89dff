import FoundationEssentials
import Glibc

/// The exclusive `flock` a running transfer holds on `tokens/<id>.lock`; the file holds its pid so
/// that `pause` knows whom to signal. The kernel drops the lock when the process dies, so a stale lock
/// file is simply taken over.
public final class TokenLock: @unchecked Sendable {
    public enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        case held(pid: Int32?)
        case cannotOpen(String, reason: String)

        public var description: String {
            switch self {
            case .held(let pid): "the transfer is running in another process" + (pid.map { " (pid \($0))" } ?? "")
            case .cannotOpen(let p, let r): "cannot open lock \(p): \(r)"
            }
        }
    }

    private let fd: Int32
    public let path: String

    /// Takes the lock without waiting, or throws `.held` with the holder's pid.
    public init(path: String) throws {
        self.path = path
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Failure.cannotOpen(path, reason: String(cString: strerror(errno))) }
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            close(fd)
            throw Failure.held(pid: Self.holder(path: path))
        }
        self.fd = fd
        ftruncate(fd, 0)
        let pid = "\(getpid())\n"
        _ = pid.utf8CString.withUnsafeBytes { pwrite(fd, $0.baseAddress, pid.utf8.count, 0) }
    }

    deinit { release() }

    private var released = false

    public func release() {
        guard !released else { return }
        released = true
        close(fd)
    }

    /// The pid of the process holding the lock, or nil when nobody holds it.
    public static func holder(path: String) -> Int32? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        if flock(fd, LOCK_SH | LOCK_NB) == 0 {
            flock(fd, LOCK_UN)
            return nil
        }
        var buffer = [UInt8](repeating: 0, count: 32)
        let n = read(fd, &buffer, 31)
        guard n > 0 else { return nil }
        return Int32(String(decoding: buffer[0..<n], as: UTF8.self).trimmingSpaces().filter { $0.isNumber })
    }
}
