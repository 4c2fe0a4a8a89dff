import Glibc

/// The exclusive `flock` a running transfer holds on `tokens/<id>.lock`, a file holding its pid for `pause`
/// (and the process's start, which makes the pid name that process only: see ``holder(path:)``).
/// The kernel drops the lock when the process dies, so a stale lock file is simply taken over.
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
        while true {
            let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw Failure.cannotOpen(path, reason: String(cString: strerror(errno))) }
            if flock(fd, LOCK_EX | LOCK_NB) != 0 {
                close(fd)
                throw Failure.held(pid: Self.holder(path: path))
            }
            // The holder before us may have removed the file after we opened it: a lock on a file that is
            // no longer at `path` excludes nobody, so take the one that is there now.
            var held = stat()
            var current = stat()
            guard fstat(fd, &held) == 0, stat(path, &current) == 0, held.st_ino == current.st_ino,
                held.st_dev == current.st_dev
            else {
                close(fd)
                continue
            }
            self.fd = fd
            break
        }
        _ = ftruncate(fd, 0)
        let pid = "\(getpid()) \(processStart(getpid()).map(String.init) ?? "")\n"
        _ = pid.utf8CString.withUnsafeBytes { pwrite(fd, $0.baseAddress, pid.utf8.count, 0) }
    }

    deinit { release() }

    private var released = false

    /// - Parameter removingFile: unlink the lock file first (safe while held: see `init`).
    public func release(removingFile: Bool = false) {
        guard !released else { return }
        released = true
        if removingFile { unlink(path) }
        close(fd)
    }

    /// The pid of the process holding the lock, or nil when nobody holds it. The pid the file names counts
    /// only while the lock is held and that pid's process started when the file says: a file left by a process
    /// gone (a reboot, or a lock just taken and not yet rewritten) may name a pid some other process has now.
    public static func holder(path: String) -> Int32? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        if flock(fd, LOCK_SH | LOCK_NB) == 0 {
            flock(fd, LOCK_UN)
            return nil
        }
        var buffer = [UInt8](repeating: 0, count: 64)
        let n = read(fd, &buffer, 63)
        guard n > 0 else { return nil }
        let words = String(decoding: buffer[0..<n], as: UTF8.self).split(whereSeparator: { $0 == " " || $0 == "\n" })
        guard words.count == 2, let pid = Int32(words[0]), let started = UInt64(words[1]), processStart(pid) == started
        else { return nil }
        return pid
    }

    /// The pid holding a `flock` on the file open at `fd`, read from `/proc/locks` (Linux), for the
    /// `.part` file of a download that has no token (and so no lock file) yet.
    public static func flockHolder(of fd: Int32) -> Int32? {
        var st = stat()
        guard fstat(fd, &st) == 0, let table = try? String(contentsOfFile: "/proc/locks", encoding: .utf8) else {
            return nil
        }
        let dev = UInt64(st.st_dev)
        let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & ~0xfff)
        let minor = (dev & 0xff) | ((dev >> 12) & ~0xff)
        // "1: FLOCK  ADVISORY  WRITE 4242 fd:01:1234567 0 EOF"
        let hex = { (n: UInt64) in (n < 16 ? "0" : "") + String(n, radix: 16) }
        let file = hex(major) + ":" + hex(minor) + ":\(st.st_ino)"
        for line in table.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count >= 6, fields[1] == "FLOCK", fields[5] == file else { continue }
            return Int32(fields[4])
        }
        return nil
    }
}
