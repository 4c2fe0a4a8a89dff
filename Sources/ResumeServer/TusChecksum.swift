import Crypto
import NIOCore

/// tus's checksum extension: the `Upload-Checksum: ALGORITHM BASE64` of one PATCH body, computed as
/// the bytes arrive and compared once the body has ended (a mismatch is `460`, the bytes not counted).
struct TusChecksum {
    static let algorithms = "sha1,sha256"

    private enum Hasher {
        case sha1(Insecure.SHA1)
        case sha256(SHA256)
    }

    private var hasher: Hasher
    private let expected: [UInt8]

    /// `nil` with `unsupported` set when the header names an algorithm not offered or is malformed.
    init?(header: String) {
        let parts = header.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 2, let expected = Base64.decode(parts[1]) else { return nil }
        switch parts[0].lowercased() {
        case "sha1": hasher = .sha1(Insecure.SHA1())
        case "sha256": hasher = .sha256(SHA256())
        default: return nil
        }
        self.expected = expected
    }

    mutating func update(_ buffer: ByteBuffer) {
        buffer.withUnsafeReadableBytes { update($0) }
    }

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        switch hasher {
        case .sha1(var h):
            h.update(bufferPointer: bytes)
            hasher = .sha1(h)
        case .sha256(var h):
            h.update(bufferPointer: bytes)
            hasher = .sha256(h)
        }
    }

    func matches() -> Bool {
        switch hasher {
        case .sha1(let h): Array(h.finalize()) == expected
        case .sha256(let h): Array(h.finalize()) == expected
        }
    }
}
