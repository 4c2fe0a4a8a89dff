import Testing
@testable import ResumeKit

/// ISA-L's CRCs against the published check values (the CRC of "123456789"), whole and fed piece by piece,
/// and as S3's headers carry them.
@Suite struct HardwareCRCTests {
    static let check = Array("123456789".utf8)

    func crc(_ kind: HardwareCRC.Kind, _ bytes: [UInt8], pieces: Int = 1) -> HardwareCRC {
        var crc = HardwareCRC(kind)
        let step = max(1, bytes.count / pieces)
        var at = 0
        while at < bytes.count {
            let end = min(bytes.count, at + step)
            bytes[at..<end].withUnsafeBytes { crc.update($0) }
            at = end
        }
        return crc
    }

    @Test func checkValues() {
        #expect(crc(.crc32c, Self.check).value == 0xE306_9283)
        #expect(crc(.crc32, Self.check).value == 0xCBF4_3926)
        #expect(crc(.crc32c, []).value == 0 && crc(.crc32, []).value == 0)
    }

    @Test func piecesGiveTheWholeValue() {
        var bytes = [UInt8](repeating: 0, count: 1 << 20)
        var seed: UInt64 = 7
        for i in bytes.indices {
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            bytes[i] = UInt8(truncatingIfNeeded: seed >> 33)
        }
        for kind in [HardwareCRC.Kind.crc32, .crc32c] {
            #expect(crc(kind, bytes, pieces: 7).value == crc(kind, bytes).value)
        }
    }

    @Test func s3HeaderForm() {
        // S3's x-amz-checksum-crc32c is the base64 of the big-endian CRC: 0xE3069283 → 4waSgw==.
        var hasher = DigestAlgorithm.crc32c.hasher()
        Self.check.withUnsafeBytes { hasher.update(bufferPointer: $0) }
        #expect(hasher.digestBytes() == [0xE3, 0x06, 0x92, 0x83])
        #expect(S3Checksum.crc32c.flexibleName == "CRC32C" && S3Checksum.md5.flexibleName == nil)
        #expect(DigestAlgorithm.strongest(of: ["crc32", "md5"]) == .md5, "a CRC is never chosen as a tus checksum")
    }
}
