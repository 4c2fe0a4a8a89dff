import Dispatch
import Synchronization

/// The requests a folder upload has in flight at once, over all its files (a small file's request, each S3
/// part): a file alone (the last large one) may use them all while many files at once share them.
final class RequestBudget: Sendable {
    let limit: Int
    private let free: Mutex<Int>
    /// Rung by each request given back (extra rings only wake a waiter to look again).
    private let returned = DispatchSemaphore(value: 0)

    init(_ limit: Int) {
        self.limit = max(1, limit)
        free = Mutex(self.limit)
    }

    /// Takes a request; `waiting`, until one is free or `cancellation` stops (checked every 200 ms).
    /// - Returns: false when none was taken.
    func take(waiting: Bool, unless cancellation: Cancellation) -> Bool {
        while true {
            let took = free.withLock { n -> Bool in
                guard n > 0 else { return false }
                n -= 1
                return true
            }
            if took { return true }
            if !waiting || cancellation.isStopped { return false }
            _ = returned.wait(timeout: .now() + .milliseconds(200))
        }
    }

    func give() {
        free.withLock { $0 += 1 }
        returned.signal()
    }
}
