import Crypto
import FoundationEssentials
import Glibc

/// RFC 9530's `Repr-Digest` of a served file, computed only when a HEAD asks for it with
/// `Want-Repr-Digest: sha-256=…`: a client that would send the file checks first whether the server holds
/// the same bytes (`resumectl upload --skip-existing`). It runs on the thread pool, never on an event loop.
enum ReprDigest {
    /// True when `Want-Repr-Digest` names sha-256 with a non-zero preference.
    static func wanted(_ values: [String]) -> Bool {
        values.joined(separator: ",").split(separator: ",").contains { member in
            let parts = member.split(separator: "=", maxSplits: 1).map {
                $0.filter { $0 != " " && $0 != "\t" }.lowercased()
            }
            return parts.first == "sha-256" && parts.last != "0"
        }
    }

    /// The field value, `sha-256=:BASE64:`, of the file open at `fd` (read with pread: the offset stays).
    static func sha256(fd: Int32) -> String? {
        var hasher = SHA256()
        var buffer = [UInt8](repeating: 0, count: 256 << 10)
        var offset: off_t = 0
        while true {
            let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, offset) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 { return nil }
            if n == 0 { break }
            buffer.withUnsafeBytes { hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            offset += off_t(n)
        }
        return "sha-256=:" + Data(hasher.finalize()).base64EncodedString() + ":"
    }
}
