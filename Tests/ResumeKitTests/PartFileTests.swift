import Foundation
import Testing
import Crypto
@testable import ResumeKit

/// The `.part` file gathers libcurl's 16 KiB pieces into larger writes past its first MiB; whatever it
/// gathers must reach the file, in order, before any sync, read or truncation.
@Suite struct PartFileTests {
    let path = scratchPath("rctl-part", suffix: ".part")

    private func bytes(_ count: Int, seed: UInt8) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31) &+ seed }
    }

    @Test func gatheredPiecesReachTheFileInOrder() throws {
        defer { unlink(path) }
        let part = try PartFile(path: path, keeping: 0)
        var expected: [UInt8] = []
        for (i, size) in ([16384, 7, 16384, 300_000, 1, 16384] + Array(repeating: 16384, count: 200)).enumerated() {
            let piece = bytes(size, seed: UInt8(truncatingIfNeeded: i))
            try piece.withUnsafeBytes { try part.append($0) }
            expected += piece
        }
        #expect(part.length == Int64(expected.count))
        #expect(part.written < part.length)  // some of it is still gathered
        try part.sync()
        #expect(part.committed == Int64(expected.count))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data(expected))

        // A truncation (a restarted range) and a read both see everything received before them.
        try bytes(50_000, seed: 9).withUnsafeBytes { try part.append($0) }
        try part.truncate(to: 2_000_000)
        expected = Array(expected[0..<2_000_000])
        let tail = bytes(40_000, seed: 3)
        try tail.withUnsafeBytes { try part.append($0) }
        expected += tail
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 40_000, alignment: 16)
        defer { buffer.deallocate() }
        #expect(try part.read(at: 2_000_000, into: buffer) == 40_000)
        #expect(Array(buffer) == tail)
        part.close()
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data(expected))
    }
}

/// The upload source's identity hash must not change between versions: tokens on disk carry it.
@Suite struct EdgeHashTests {
    @Test(arguments: [10, 1_500_000, 3_000_000])
    func isTheSHA256OfTheFirstAndLastMiB(size: Int) throws {
        let path = scratchPath("rctl-edge")
        defer { unlink(path) }
        let bytes = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 9) }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let mib = 1 << 20
        var expected = Array(bytes.prefix(mib))
        if size > mib { expected += bytes.suffix(mib) }
        let fd = open(path, O_RDONLY)
        defer { close(fd) }
        let hash = try SourceFile.edgeHash(fd: fd, size: Int64(size), path: path)
        #expect(hash == sha256Hex(expected))
    }

    private func sha256Hex(_ bytes: [UInt8]) -> String {
        var hasher = SHA256()
        hasher.update(data: bytes)
        return hasher.finalize().map { String(format: "%02x", $0) }.joined()
    }
}
