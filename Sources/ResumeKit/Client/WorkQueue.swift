import Synchronization

/// Hands out list indexes to the workers and collects their results.
final class WorkQueue<Value: Sendable>: Sendable {
    private let next = Atomic<Int>(0)
    private let count: Int
    private let collected: Mutex<[Value?]>
    /// Taken once and handed back, last first: what a first pass left (see SmallFilePass).
    private let returned = Mutex<[Int]>([])

    init(count: Int) {
        self.count = count
        collected = Mutex(Array(repeating: nil, count: count))
    }

    func take() -> Int? {
        if let i = returned.withLock({ $0.popLast() }) { return i }
        let i = next.add(1, ordering: .relaxed).oldValue
        return i < count ? i : nil
    }

    /// Every index was taken and none handed back.
    var isDrained: Bool {
        next.load(ordering: .relaxed) >= count && returned.withLock { $0.isEmpty }
    }

    /// Hands `indices` out again, in their order and before any not taken yet.
    func putBack(_ indices: [Int]) {
        returned.withLock { $0 = indices.reversed() + $0 }
    }

    func finish(_ i: Int, _ result: Value) {
        collected.withLock { $0[i] = result }
    }

    var results: [Value?] { collected.withLock { $0 } }
}
