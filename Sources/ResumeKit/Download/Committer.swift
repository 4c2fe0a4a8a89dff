import Dispatch
import Glibc
import Synchronization

/// Makes checkpoints durable on a queue of its own, so the thread receiving the body never waits for
/// the disk: fdatasync of the `.part` file, then the token that records the synced length. A checkpoint
/// asked for while one is still running is skipped; the next one covers its bytes.
final class Committer: Sendable {
    private let queue = DispatchQueue(label: "resumectl.checkpoint")
    private let state = Mutex<(busy: Bool, error: String?)>((false, nil))

    /// Starts a checkpoint of `fd` unless one is running. `record` writes the token and runs only after the
    /// data is on disk.
    func checkpoint(fd: Int32, path: String, record: @escaping @Sendable () throws -> Void) -> Bool {
        let started = state.withLock { s -> Bool in
            if s.busy || s.error != nil { return false }
            s.busy = true
            return true
        }
        guard started else { return false }
        queue.async {
            var failure: String?
            if fdatasync(fd) != 0 {
                failure = "cannot write \(path): \(String(cString: strerror(errno)))"
            } else {
                do { try record() } catch { failure = "\(error)" }
            }
            self.state.withLock { s in
                s.busy = false
                if let failure { s.error = failure }
            }
        }
        return true
    }

    private let writeback = DispatchQueue(label: "resumectl.writeback")
    private let kicking = Atomic<Bool>(false)

    /// Starts the disk writing `ranges` of `fd` now, so that the final fsync has little left to wait for.
    /// - Returns: false when a kick is still running; the caller keeps the range for the next one.
    func startWriteback(fd: Int32, ranges: [Range<Int64>]) -> Bool {
        guard kicking.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else {
            return false
        }
        writeback.async {
            // On Linux this starts writeback of the range's dirty pages without waiting for it.
            for range in ranges where !range.isEmpty {
                _ = posix_fadvise(fd, off_t(range.lowerBound), off_t(range.count), POSIX_FADV_DONTNEED)
            }
            self.kicking.store(false, ordering: .releasing)
        }
        return true
    }

    /// The first failure of a background checkpoint, if any.
    var error: String? { state.withLock { $0.error } }

    /// Waits until no checkpoint is running, so that a later token write cannot be overtaken.
    func waitIdle() {
        writeback.sync {}
        queue.sync {}
    }
}
