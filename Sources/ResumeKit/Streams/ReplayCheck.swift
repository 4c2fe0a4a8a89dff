/// Checks bytes of a replayed stream against a ledger's blocks and, where the checked range ends inside a
/// block, against the token's checksum of that block's first bytes (``ResumeToken/StreamState/tail``).
struct ReplayCheck {
    enum Finding: Equatable {
        /// Every byte so far agrees; more are expected.
        case agrees
        /// All checked bytes agree.
        case complete
        /// Block `index` differs (`index` = the ledger's block count: the open block): the replay is another stream.
        case differs(block: Int)
    }

    let ledger: StreamLedger
    /// Where the checked range ends.
    let count: Int64
    private let tail: String?
    private var hasher: any BodyHasher
    private var checked: Int64

    /// Checks `[from, count)`: `from` is a block boundary; a `count` inside a block needs `tail`.
    init(ledger: StreamLedger, from: Int64 = 0, upTo count: Int64, tail: String? = nil) {
        precondition(from % ledger.blockSize == 0 && from <= count && count / ledger.blockSize <= Int64(ledger.blocks.count))
        precondition(count % ledger.blockSize == 0 || tail != nil)
        self.ledger = ledger
        self.count = count
        self.tail = tail
        hasher = ledger.blockHasher()
        checked = from
    }

    /// Bytes still to be checked.
    var remaining: Int64 { count - checked }

    /// Takes at most ``remaining`` bytes of the replay, in stream order from `from`.
    mutating func feed(_ bytes: UnsafeRawBufferPointer) -> Finding {
        var rest = bytes[...].prefix(Int(min(Int64(bytes.count), remaining)))
        while !rest.isEmpty {
            let inBlock = checked % ledger.blockSize
            let take = Int(min(Int64(rest.count), ledger.blockSize - inBlock))
            hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: rest.prefix(take)))
            checked += Int64(take)
            rest = rest.dropFirst(take)
            if checked % ledger.blockSize == 0 {
                let index = Int(checked / ledger.blockSize) - 1
                guard hasher.digestBytes().hex == ledger.blocks[index] else { return .differs(block: index) }
                hasher = ledger.blockHasher()
            }
        }
        guard checked == count else { return .agrees }
        if count % ledger.blockSize != 0, hasher.digestBytes().hex != tail {
            return .differs(block: Int(count / ledger.blockSize))
        }
        return .complete
    }
}
