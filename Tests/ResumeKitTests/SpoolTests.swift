import Foundation
import Testing
import Crypto
@testable import ResumeKit

/// The spool of a streamed upload: bytes in at the end, acknowledged bytes given back from the front,
/// reopened after a crash at what its token recorded, and a replay checked against the ledger.
@Suite struct SpoolTests {
    let path = scratchPath("rctl-spool", suffix: ".spool")

    private func bytes(_ count: Int, seed: UInt8) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7) &+ seed }
    }

    private func read(_ spool: Spool, at offset: Int64, count: Int) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        let n = try out.withUnsafeMutableBytes { try spool.read(at: offset, into: $0) }
        return Array(out[0..<n])
    }

    @Test func appendAcknowledgeDrop() throws {
        defer { unlink(path) }
        let spool = try Spool.create(path: path)
        let first = bytes(3 << 20, seed: 1)
        let second = bytes(1 << 20, seed: 2)
        try first.withUnsafeBytes { try spool.append($0) }
        try second.withUnsafeBytes { try spool.append($0) }
        #expect(spool.end == 4 << 20)
        #expect(try spool.sync() == 4 << 20)
        #expect(try read(spool, at: (3 << 20) - 5, count: 10) == Array(first.suffix(5) + second.prefix(5)))

        let before = spool.diskUse
        try Spool.punch(fd: spool.fileDescriptor, path: path, from: spool.start, to: 2 << 20)
        spool.markDropped(below: 2 << 20)
        #expect(spool.start == 2 << 20)
        #expect(spool.held == 2 << 20)
        #expect(spool.diskUse <= before - (2 << 20) + 4096)  // the blocks really went back
        #expect(try read(spool, at: 2 << 20, count: 4) == Array(first[(2 << 20)..<((2 << 20) + 4)]))
        // The file's mode keeps other users out.
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as! Int
        #expect(mode == 0o600)
        spool.remove()
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func reopenCutsUncommittedTailAndKeepsDroppedStart() throws {
        defer { unlink(path) }
        let spool = try Spool.create(path: path)
        try bytes(100_000, seed: 3).withUnsafeBytes { try spool.append($0) }
        try spool.sync()
        try Spool.punch(fd: spool.fileDescriptor, path: path, from: spool.start, to: 40_000)
        spool.markDropped(below: 40_000)
        try bytes(5_000, seed: 4).withUnsafeBytes { try spool.append($0) }  // never synced: lost in a crash
        spool.close()

        let again = try Spool.reopen(path: path, start: 40_000, synced: 100_000)
        #expect(again.start == 40_000)
        #expect(again.end == 100_000)
        #expect(try read(again, at: 99_990, count: 100) == Array(bytes(100_000, seed: 3).suffix(10)))
        try bytes(10, seed: 5).withUnsafeBytes { try again.append($0) }
        #expect(again.end == 100_010)
    }

    /// A power loss may leave less than was written: nothing after `synced` is relied on, and where the
    /// server acknowledged more than was synced the file is kept (as a hole) up to the acknowledged start.
    @Test func reopenWithTheServerAheadOfTheSyncKeepsAHoleUpToTheStart() throws {
        defer { unlink(path) }
        let spool = try Spool.create(path: path)
        try bytes(3_000, seed: 6).withUnsafeBytes { try spool.append($0) }
        spool.close()
        let again = try Spool.reopen(path: path, start: 1 << 20, synced: 0)
        #expect(again.start == 1 << 20 && again.end == 1 << 20 && again.synced == 1 << 20)
        try bytes(10, seed: 7).withUnsafeBytes { try again.append($0) }
        #expect(try read(again, at: 1 << 20, count: 10) == bytes(10, seed: 7))
        #expect(again.diskUse < 1 << 20, "below the start only a hole")
    }

    /// A power loss may also take the spool's own name (its folder was never synced): when the token relied
    /// on none of its bytes, it is made anew; otherwise the loss is reported.
    @Test func aSpoolThatNeverReachedTheDiskIsMadeAnewWhenNothingWasSynced() throws {
        defer { unlink(path) }
        let again = try Spool.reopen(path: path, start: 2 << 20, synced: 0)
        #expect(again.start == 2 << 20 && again.end == 2 << 20)
        again.close()
        unlink(path)
        #expect(throws: TransferError.self) { try Spool.reopen(path: path, start: 0, synced: 10) }
    }

    @Test func reopenRefusesASpoolShorterThanItsToken() throws {
        defer { unlink(path) }
        let spool = try Spool.create(path: path)
        try bytes(10, seed: 0).withUnsafeBytes { try spool.append($0) }
        spool.close()
        #expect(
            throws: TransferError(.badToken, "the spool \(path) holds 10 bytes, fewer than the 20 its token recorded")
        ) {
            try Spool.reopen(path: path, start: 0, synced: 20)
        }
        #expect(throws: TransferError.self) { try Spool.reopen(path: path + ".missing", start: 0, synced: 5) }
    }

    @Test func fullDiskIsALocalIOErrorNamingTheSpool() throws {
        // /dev/full answers every write with ENOSPC.
        let spool = try Spool.reopen(path: "/dev/full", start: 0, synced: 0)
        do {
            try bytes(10, seed: 0).withUnsafeBytes { try spool.append($0) }
            Issue.record("expected ENOSPC")
        } catch let error as TransferError {
            #expect(error.exitStatus == 74)
            #expect(error.message == "cannot write the spool /dev/full: No space left on device")
        }
        #expect(spool.end == 0)
    }

    /// The CRC32C ledger of new tokens, and the SHA-256 one (no `algorithm`) of tokens of earlier releases.
    @Test(arguments: [DigestAlgorithm.crc32c, nil])
    func ledgerHashesBlocksAndChecksAReplay(algorithm: DigestAlgorithm?) {
        let stream = bytes(2_500_000, seed: 9)
        var writer = LedgerWriter(StreamLedger(blockSize: 1 << 20, algorithm: algorithm))
        // Fed in odd pieces, hashed per block.
        var at = 0
        for size in [1, 100_000, 1_048_575, 700_000, 651_424] {
            stream[at..<(at + size)].withUnsafeBytes { writer.feed($0) }
            at += size
        }
        let ledger = writer.ledger
        func sum(_ part: ArraySlice<UInt8>) -> String {
            guard algorithm == .crc32c else { return SHA256.hash(data: part).hex }
            var crc = HardwareCRC(.crc32c)
            part.withUnsafeBytes { crc.update($0) }
            return crc.bytes.hex
        }
        #expect(ledger.blocks == [sum(stream[0..<(1 << 20)]), sum(stream[(1 << 20)..<(2 << 20)])])
        #expect(ledger.blocks.allSatisfy { $0.count == (algorithm == .crc32c ? 8 : 64) })
        #expect(ledger.dropPoint(acknowledged: 2_400_000) == 2 << 20)
        #expect(ledger.dropPoint(acknowledged: 1_000_000) == 0)

        var same = ReplayCheck(ledger: ledger, upTo: 2 << 20)
        #expect(stream[0..<1_500_000].withUnsafeBytes { same.feed($0) } == .agrees)
        #expect(same.remaining == (2 << 20) - 1_500_000)
        #expect(stream[1_500_000...].withUnsafeBytes { same.feed($0) } == .complete)

        // Where a power loss may have taken the spool's unsynced bytes, a replay is checked up to the
        // token's end: whole blocks by the ledger, the open block's first bytes by the tail.
        #expect(writer.tail == sum(stream[(2 << 20)...]))
        var beyond = ReplayCheck(ledger: ledger, from: 1 << 20, upTo: 2_500_000, tail: writer.tail)
        #expect(stream[(1 << 20)..<2_000_000].withUnsafeBytes { beyond.feed($0) } == .agrees)
        #expect(stream[2_000_000...].withUnsafeBytes { beyond.feed($0) } == .complete)
        var lastByte = stream
        lastByte[2_499_999] ^= 1
        var tailDiffers = ReplayCheck(ledger: ledger, from: 1 << 20, upTo: 2_500_000, tail: writer.tail)
        #expect(lastByte[(1 << 20)...].withUnsafeBytes { tailDiffers.feed($0) } == .differs(block: 2))

        var other = stream
        other[1_500_000] ^= 1
        var changed = ReplayCheck(ledger: ledger, upTo: 2 << 20)
        #expect(other.withUnsafeBytes { changed.feed($0) } == .differs(block: 1))
    }

    @Test func blockSizeFollowsTheSpoolBound() {
        #expect(StreamLedger.blockSize(spoolMax: 1 << 30) == 64 << 20)
        #expect(StreamLedger.blockSize(spoolMax: 32 << 20) == 4 << 20)
        #expect(StreamLedger.blockSize(spoolMax: 1 << 20) == 1 << 20)
    }
}
