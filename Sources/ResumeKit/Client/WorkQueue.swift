import Synchronization

/// Hands out list indexes to the workers and collects their results.
final class WorkQueue: Sendable {
    private let next = Atomic<Int>(0)
    private let count: Int
    private let collected: Mutex<[Result<DownloadResult, TransferError>?]>

    init(count: Int) {
        self.count = count
        collected = Mutex(Array(repeating: nil, count: count))
    }

    func take() -> Int? {
        let i = next.add(1, ordering: .relaxed).oldValue
        return i < count ? i : nil
    }

    func finish(_ i: Int, _ result: Result<DownloadResult, TransferError>) {
        collected.withLock { $0[i] = result }
    }

    var results: [Result<DownloadResult, TransferError>?] { collected.withLock { $0 } }
}
