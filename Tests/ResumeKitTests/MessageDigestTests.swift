import Testing
@testable import ResumeKit

/// libcrypto's digests against published vectors (FIPS 180 "abc", RFC 1321, RFC 4231), and the value
/// semantics the hashers are used with: a copy hashes on alone, `finalize()` leaves the state as it was.
@Suite struct MessageDigestTests {
    static let abc = Array("abc".utf8)

    @Test func publishedVectors() {
        #expect(
            MessageDigest.hash(.sha256, Self.abc).hex
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(MessageDigest.hash(.sha1, Self.abc).hex == "a9993e364706816aba3e25717850c26c9cd0d89d")
        #expect(MessageDigest.hash(.md5, []).hex == "d41d8cd98f00b204e9800998ecf8427e")
        #expect(MessageDigest.hash(.sha384, Self.abc).hex.hasPrefix("cb00753f45a35e8bb5a03d699ac65007"))
        #expect(MessageDigest.hash(.sha512, Self.abc).hex.hasPrefix("ddaf35a193617abacc417349ae204131"))
        // RFC 4231 test case 2.
        #expect(
            MessageDigest.hmacSHA256(key: Array("Jefe".utf8), Array("what do ya want for nothing?".utf8)).hex
                == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    /// FIPS 180-2's million "a"s fed in uneven pieces: the running state carries across every block boundary.
    @Test func aMillionAsInUnevenPieces() {
        var sha256 = MessageDigest(.sha256)
        var sha1 = MessageDigest(.sha1)
        var fed = 0
        var size = 1
        while fed < 1_000_000 {
            let piece = [UInt8](repeating: UInt8(ascii: "a"), count: min(size, 1_000_000 - fed))
            sha256.update(piece)
            sha1.update(piece)
            fed += piece.count
            size = size % 997 + 13
        }
        #expect(sha256.finalize().hex == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
        #expect(sha1.finalize().hex == "34aa973cd4c4daa4f61eeb2bdbad27316534016f")
    }

    @Test func copiesAndFinalizeKeepTheirOwnState() {
        var running = MessageDigest(.sha256)
        running.update(Array("a".utf8))
        let copy = running
        #expect(running.finalize() == MessageDigest.hash(.sha256, Array("a".utf8)))
        running.update(Array("bc".utf8))
        #expect(running.finalize() == MessageDigest.hash(.sha256, Self.abc))
        #expect(copy.finalize() == MessageDigest.hash(.sha256, Array("a".utf8)))
    }
}
