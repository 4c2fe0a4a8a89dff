/// Feeds stream bytes into a ledger, one block hash at a time.
struct LedgerWriter {
    private(set) var ledger: StreamLedger
    private var hasher: any BodyHasher
    private var inBlock: Int64 = 0

    /// Continues a ledger whose blocks are all complete (a resumed stream starts at a block boundary).
    init(_ ledger: StreamLedger) {
        self.ledger = ledger
        hasher = ledger.blockHasher()
    }

    /// The checksum of the open block's bytes so far (``ResumeToken/StreamState/tail``); nil at a block boundary.
    var tail: String? { inBlock > 0 ? hasher.digestBytes().hex : nil }

    mutating func feed(_ bytes: UnsafeRawBufferPointer) {
        var rest = bytes[...]
        while !rest.isEmpty {
            let take = Int(min(Int64(rest.count), ledger.blockSize - inBlock))
            hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: rest.prefix(take)))
            inBlock += Int64(take)
            rest = rest.dropFirst(take)
            if inBlock == ledger.blockSize {
                ledger.blocks.append(hasher.digestBytes().hex)
                hasher = ledger.blockHasher()
                inBlock = 0
            }
        }
    }
}
