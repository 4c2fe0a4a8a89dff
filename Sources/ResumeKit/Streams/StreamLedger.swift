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
