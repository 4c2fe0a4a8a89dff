/// Checks the first bytes of a replayed stream against a ledger's blocks.
struct ReplayCheck {
    enum Finding: Equatable {
        /// Every byte so far agrees; more are expected.
        case agrees
        /// All `count` checked bytes agree: the rest of the replay is compared against the spool.
        case complete
        /// Block `index` differs: the replay is another stream.
        case differs(block: Int)
    }

    let ledger: StreamLedger
    /// Bytes to check: the spool's start (a block boundary).
    let count: Int64
    private var hasher: any BodyHasher
    private var checked: Int64 = 0

    init(ledger: StreamLedger, upTo count: Int64) {
        precondition(count % ledger.blockSize == 0 && count / ledger.blockSize <= Int64(ledger.blocks.count))
        self.ledger = ledger
        self.count = count
        hasher = ledger.blockHasher()
    }

    /// Bytes still to be checked before the replay reaches the spool.
    var remaining: Int64 { count - checked }

    /// Takes at most ``remaining`` bytes of the replay.
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
        return checked == count ? .complete : .agrees
    }
}
