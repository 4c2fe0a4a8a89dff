/// A checksum of each block of a stream, taken as the stream is read and kept in the token, so that a
/// replayed stream (`producer | resumectl resume TOKEN` after the first pipe was lost) can be checked
/// against bytes the spool no longer holds before anything new is appended. The checksum is a CRC32C
/// (ISA-L: a few hundredths of a second per GiB, where SHA-256 took 0.8 s of the reader's CPU): the
/// replay is the user's own producer run again, and the check is there to catch a different stream, which
/// differs in a block's CRC but for a chance of one in 2³² per block. Tokens of earlier releases hold SHA-256s.
///
/// A spool drops bytes only at block boundaries, so every byte of a replay is checked: below the spool's
/// start against these hashes, inside the spool against the spool itself.
public struct StreamLedger: Codable, Sendable, Equatable {
    public var blockSize: Int64
    /// Lower-case hex checksum of each complete block, in stream order.
    public var blocks: [String]
    /// The blocks' checksum; absent (SHA-256) in tokens of earlier releases.
    public var algorithm: DigestAlgorithm?

    public init(blockSize: Int64, blocks: [String] = [], algorithm: DigestAlgorithm? = .crc32c) {
        precondition(blockSize > 0)
        self.blockSize = blockSize
        self.blocks = blocks
        self.algorithm = algorithm
    }

    /// A running checksum of one block.
    func blockHasher() -> any BodyHasher { (algorithm ?? .sha256).hasher() }

    /// The largest block boundary at or below `offset`: how far a spool may drop once `offset` bytes are
    /// acknowledged, given the blocks hashed so far.
    public func dropPoint(acknowledged offset: Int64) -> Int64 {
        min(offset / blockSize, Int64(blocks.count)) * blockSize
    }

    /// A block size for a spool bounded by `spoolMax` bytes: small enough that dropping at block
    /// boundaries keeps the spool near its bound, large enough that a 1 TiB stream keeps a small token.
    public static func blockSize(spoolMax: Int64) -> Int64 {
        max(1 << 20, min(64 << 20, spoolMax / 8))
    }
}

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
