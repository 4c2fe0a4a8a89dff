import CLibCrypto

/// A running SHA-2, SHA-1 or MD5 from the system's libcrypto: libcurl maps it for TLS anyway, so hashing
/// costs no code of our own (it uses SHA-NI and AVX where the machine has them). A value: a copy hashes
/// on by itself, and `finalize()` leaves the running state as it was.
struct MessageDigest: @unchecked Sendable {
    enum Algorithm: Sendable { case sha512, sha384, sha256, sha1, md5 }

    /// The EVP context, copied before an update when another value shares it.
    private final class Context {
        let pointer: OpaquePointer
        init(_ pointer: OpaquePointer) { self.pointer = pointer }
        deinit { EVP_MD_CTX_free(pointer) }

        func copy() -> Context {
            let other = EVP_MD_CTX_new()!
            precondition(EVP_MD_CTX_copy_ex(other, pointer) == 1, "libcrypto cannot copy a digest context")
            return Context(other)
        }
    }

    private var context: Context

    init(_ algorithm: Algorithm) {
        let md: OpaquePointer? = switch algorithm {
        case .sha512: EVP_sha512()
        case .sha384: EVP_sha384()
        case .sha256: EVP_sha256()
        case .sha1: EVP_sha1()
        case .md5: EVP_md5()
        }
        let pointer = EVP_MD_CTX_new()!
        // Fails only where the library lacks the algorithm (MD5 under a FIPS-only configuration).
        precondition(EVP_DigestInit_ex(pointer, md, nil) == 1, "libcrypto has no \(algorithm)")
        context = Context(pointer)
    }

    mutating func update(bufferPointer bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        if !isKnownUniquelyReferenced(&context) { context = context.copy() }
        EVP_DigestUpdate(context.pointer, base, bytes.count)
    }

    mutating func update(_ bytes: [UInt8]) { bytes.withUnsafeBytes { update(bufferPointer: $0) } }

    /// The digest of everything fed so far.
    func finalize() -> [UInt8] {
        let done = context.copy()
        var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        EVP_DigestFinal_ex(done.pointer, &out, &length)
        return Array(out.prefix(Int(length)))
    }

    static func hash(_ algorithm: Algorithm, _ bytes: [UInt8]) -> [UInt8] {
        var digest = MessageDigest(algorithm)
        digest.update(bytes)
        return digest.finalize()
    }

    /// HMAC-SHA256 (RFC 2104), for SigV4's signing key chain and signature.
    static func hmacSHA256(key: [UInt8], _ message: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        _ = HMAC(EVP_sha256(), key, Int32(key.count), message, message.count, &out, &length)
        return Array(out.prefix(Int(length)))
    }
}

extension Sequence where Element == UInt8 {
    /// Lowercase hex, without Foundation's formatting machinery.
    var hex: String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for byte in self {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
