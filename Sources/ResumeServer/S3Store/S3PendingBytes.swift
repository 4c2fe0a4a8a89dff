import NIOCore

/// The bytes of one request on their way to S3, counted against the server's one ``BodyMemory`` budget
/// from their arrival until S3 has acknowledged the part (or the tail) that carries them.
///
/// Bytes are copied as they come into the part they belong to, allocated once at the part's size, and
/// a whole part leaves as it is. Before, one growing array was cut from the front at every part (its
/// capacity up to twice what it held, every cut moving the rest), and keeping the network's buffers
/// instead would keep the larger reads they are slices of. Used on one event loop.
final class S3PendingBytes {
    private let memory: BodyMemory
    private let partSize: Int
    /// Whole parts, waiting to be sent.
    private var full: [[UInt8]] = []
    /// The part being filled.
    private var filling: [UInt8] = []
    /// Bytes waiting, not yet in a piece being sent.
    private(set) var queued = 0
    /// Bytes of the pieces being sent, not yet acknowledged by S3.
    private(set) var sending = 0

    init(memory: BodyMemory, partSize: Int) {
        self.memory = memory
        self.partSize = partSize
    }

    /// Everything this request holds in memory.
    var held: Int { queued + sending }

    func append(_ buffer: ByteBuffer) {
        buffer.withUnsafeReadableBytes { append($0) }
    }

    private func append(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        memory.take(bytes.count)
        queued += bytes.count
        var offset = 0
        while offset < bytes.count {
            if filling.isEmpty { filling.reserveCapacity(partSize) }
            let count = min(partSize - filling.count, bytes.count - offset)
            filling.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + count]))
            offset += count
            if filling.count == partSize {
                full.append(filling)
                filling = []
            }
        }
    }

    /// Puts bytes read back from S3 (the tail) before everything waiting (once, at the request's start).
    func prepend(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        let waiting = Array(full.joined()) + filling
        memory.give(queued)
        queued = 0
        full = []
        filling = []
        bytes.withUnsafeBytes { append($0) }
        waiting.withUnsafeBytes { append($0) }
    }

    /// The first `count` waiting bytes, to be sent; they count until ``acknowledged(_:)``.
    func take(_ count: Int) -> [UInt8] {
        let count = min(count, queued)
        let out: [UInt8]
        if let first = full.first, first.count == count {
            out = first
            full.removeFirst()
        } else if full.isEmpty, filling.count == count {
            out = filling
            filling = []
        } else {
            // Never while a request runs (a piece is a whole part, or everything left at its end).
            let all = Array(full.joined()) + filling
            out = Array(all.prefix(count))
            full = []
            filling = []
            let rest = all.dropFirst(count)
            memory.give(rest.count)
            queued -= rest.count
            rest.withUnsafeBytes { append($0) }
        }
        queued -= count
        sending += count
        return out
    }

    /// A piece sent (stored or failed): its bytes leave the budget.
    func acknowledged(_ count: Int) {
        sending -= count
        memory.give(count)
    }

    /// The waiting bytes go (the request failed, or was refused): they will not be stored.
    func drop() {
        memory.give(queued)
        queued = 0
        full = []
        filling = []
    }

    deinit {
        memory.give(queued + sending)
    }
}
