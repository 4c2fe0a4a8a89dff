/// The last `capacity` bytes written, for comparing a resumed body with what the reader already has.
struct TailRing {
    private var storage: [UInt8]
    private var next = 0
    private(set) var count = 0

    init(capacity: Int) { storage = [UInt8](repeating: 0, count: capacity) }

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        let capacity = storage.count
        let tail = bytes.count > capacity ? UnsafeRawBufferPointer(rebasing: bytes[(bytes.count - capacity)...]) : bytes
        storage.withUnsafeMutableBytes { ring in
            // At most two copies: up to the end of the storage, then from its start.
            let first = min(tail.count, capacity - next)
            ring.baseAddress!.advanced(by: next).copyMemory(from: tail.baseAddress!, byteCount: first)
            if first < tail.count {
                ring.baseAddress!.copyMemory(from: tail.baseAddress!.advanced(by: first), byteCount: tail.count - first)
            }
        }
        next = (next + tail.count) % capacity
        count = min(capacity, count + tail.count)
    }

    /// The last `n` bytes (n ≤ count), oldest first.
    func suffix(_ n: Int) -> [UInt8] {
        let capacity = storage.count
        let start = (next - n + capacity) % capacity
        return (0..<n).map { storage[(start + $0) % capacity] }
    }
}
