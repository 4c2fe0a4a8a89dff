import Glibc
import Synchronization

/// Keeps a second process off a file that a download is writing, also while that file has no `.part`
/// whose `flock` would say so: a list's small file is written to an unnamed file (`PartFile(unnamedIn:)`)
/// and named only once whole. Every download that writes a file claims its path: a POSIX record lock on
/// one byte of `STATE/run/outputs.lock`, at an offset taken from the path, held while it writes. A process
/// that finds the byte locked is refused with the holder's pid (which `F_GETLK` reports); the kernel frees a
/// killed process's locks. One process's record locks never conflict with each other, so the paths it
/// holds are also kept in a set.
final class OutputLocks: Sendable {
    /// A path held until `release()` (which `PartFile.close` calls for the file it was given to).
    final class Claim: Sendable {
        fileprivate let locks: OutputLocks
        fileprivate let offset: Int64
        private let held = Atomic<Bool>(true)

        fileprivate init(locks: OutputLocks, offset: Int64) {
            self.locks = locks
            self.offset = offset
        }

        func release() {
            if held.exchange(false, ordering: .relaxed) { locks.release(offset) }
        }

        deinit { release() }
    }

    private let fd: Int32
    private let holding = Mutex<Set<Int64>>([])

    private init(fd: Int32) { self.fd = fd }

    /// One instance per state folder for the whole process, its file never closed: closing any descriptor of
    /// a file drops every record lock the process has on it. Nil when the file cannot be opened (a read-only
    /// state folder): then the `.part` locks are all there is, and nothing is written unnamed.
    static func shared(_ state: StateDirectory) -> OutputLocks? {
        opened.withLock { known in
            if let locks = known[state.path] { return locks }
            let path = state.run + "/outputs.lock"
            var fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            if fd < 0, errno == ENOENT, (try? state.make(state.run)) != nil {
                fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            }
            guard fd >= 0 else { return nil }
            let locks = OutputLocks(fd: fd)
            known[state.path] = locks
            return locks
        }
    }

    private static let opened = Mutex<[String: OutputLocks]>([:])

    /// Claims `path` (absolute and normalized, as `OutputPath.resolve` gives it).
    /// - Returns: the claim, or nil when the lock could not be taken for another reason than a holder.
    /// - Throws: `PartFile.Busy` when another download (of this process or another) holds the path.
    func claim(_ path: String) throws(PartFile.Busy) -> Claim? {
        let offset = Self.offset(of: path)
        return try holding.withLock { (held: inout Set<Int64>) throws(PartFile.Busy) -> Claim? in
            if held.contains(offset) { throw PartFile.Busy(pid: getpid()) }
            var lock = record(F_WRLCK, at: offset)
            if fcntl(fd, F_SETLK, &lock) != 0 {
                guard errno == EAGAIN || errno == EACCES else { return nil }
                var probe = record(F_WRLCK, at: offset)
                let pid = fcntl(fd, F_GETLK, &probe) == 0 && probe.l_type != Int16(F_UNLCK) ? probe.l_pid : nil
                throw PartFile.Busy(pid: pid)
            }
            held.insert(offset)
            return Claim(locks: self, offset: offset)
        }
    }

    fileprivate func release(_ offset: Int64) {
        holding.withLock { held in
            var lock = record(F_UNLCK, at: offset)
            _ = fcntl(fd, F_SETLK, &lock)
            held.remove(offset)
        }
    }

    private func record(_ type: Int32, at offset: Int64) -> flock {
        var lock = flock()
        lock.l_type = Int16(type)
        lock.l_whence = Int16(SEEK_SET)
        lock.l_start = off_t(offset)
        lock.l_len = 1
        return lock
    }

    /// FNV-1a of the path's bytes, kept below 2^62 so that the byte after it is a valid offset too. Two paths
    /// on one byte (about one chance in 10^13 for a thousand files at once) only refuse each other.
    static func offset(of path: String) -> Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in path.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return Int64(hash & ((1 << 62) - 1))
    }
}
