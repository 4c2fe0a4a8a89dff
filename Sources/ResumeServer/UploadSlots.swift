import Synchronization

/// Counts the uploads in progress against `--max-uploads`, so that a crowd of clients cannot hold
/// every descriptor and the disk's bandwidth at once.
///
/// The front door peeks (``isFull``) to answer 503 before anything is stored or promised; each
/// upload's sink then takes a slot for as long as it stores bytes. Two uploads arriving together
/// at the last free slot both pass the peek; the second sink's ``acquire()`` fails and it answers 503.
final class UploadSlots: Sendable {
    let limit: Int
    private let inUse = Mutex(0)

    init(limit: Int) {
        self.limit = limit
    }

    var isFull: Bool { inUse.withLock { $0 >= limit } }

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
