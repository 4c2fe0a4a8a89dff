import Synchronization

/// Hands out list indexes to the workers and collects their results.
final class WorkQueue<Value: Sendable>: Sendable {
    private let next = Atomic<Int>(0)
    private let count: Int
    private let collected: Mutex<[Value?]>

    init(count: Int) {
        self.count = count
        collected = Mutex(Array(repeating: nil, count: count))
    }

    func take() -> Int? {
        let i = next.add(1, ordering: .relaxed).oldValue
        return i < count ? i : nil
    }

    func finish(_ i: Int, _ result: Value) {
        collected.withLock { $0[i] = result }
    }

    var results: [Value?] { collected.withLock { $0 } }
}
