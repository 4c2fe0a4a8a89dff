import Synchronization

/// Counts the uploads in progress against `--max-uploads`, so that a crowd of clients cannot hold
/// every descriptor and the disk's bandwidth at once.
///
/// A creation takes a slot (``acquire()``) before anything is stored or promised, 503 when none is free, and
/// holds it until the upload is finished or gone.
final class UploadSlots: Sendable {
    let limit: Int
    private let inUse = Mutex(0)

    init(limit: Int) {
        self.limit = limit
    }

    func acquire() -> Bool {
        inUse.withLock { count in
            guard count < limit else { return false }
            count += 1
            return true
        }
    }

    func release() {
        inUse.withLock { $0 = max(0, $0 - 1) }
    }
}
