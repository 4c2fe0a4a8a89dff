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
    /// The replay's own ledger, hashed as the stream's was.
    private var replay: LedgerWriter
    private var checked: Int64

    /// Checks `[from, count)`: `from` is a block boundary; a `count` inside a block needs `tail`.
    init(ledger: StreamLedger, from: Int64 = 0, upTo count: Int64, tail: String? = nil) {
        precondition(
            from % ledger.blockSize == 0 && from <= count && count / ledger.blockSize <= Int64(ledger.blocks.count))
        precondition(count % ledger.blockSize == 0 || tail != nil)
        self.ledger = ledger
        self.count = count
        self.tail = tail
        var before = ledger
        before.blocks = Array(ledger.blocks.prefix(Int(from / ledger.blockSize)))
        replay = LedgerWriter(before)
        checked = from
    }

    /// Bytes still to be checked.
    var remaining: Int64 { count - checked }

    /// Takes at most ``remaining`` bytes of the replay, in stream order from `from`.
    mutating func feed(_ bytes: UnsafeRawBufferPointer) -> Finding {
        let take = Int(min(Int64(bytes.count), remaining))
        let first = replay.ledger.blocks.count
        replay.feed(UnsafeRawBufferPointer(rebasing: bytes[0..<take]))
        checked += Int64(take)
        let hashed = replay.ledger.blocks
        if let index = (first..<hashed.count).first(where: { hashed[$0] != ledger.blocks[$0] }) {
            return .differs(block: index)
        }
        guard checked == count else { return .agrees }
        return count % ledger.blockSize != 0 && replay.tail != tail
            ? .differs(block: Int(count / ledger.blockSize)) : .complete
    }
}
