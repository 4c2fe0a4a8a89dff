import CLibCrypto

/// A running SHA-2, SHA-1 or MD5 from the system's libcrypto: libcurl maps it for TLS anyway, so hashing
/// costs no code of our own (it uses SHA-NI and AVX where the machine has them). A value: a copy hashes
/// on by itself, and `finalize()` leaves the running state as it was.
///
/// It calls the one-algorithm functions (`SHA256_Update` …), not EVP: a process's first EVP digest builds
/// the provider name map of every algorithm and asks the engines (3.2 M instructions, 15% of a whole 4 KiB
/// download), for the same block functions underneath.
struct MessageDigest: Sendable {
    enum Algorithm: Sendable { case sha512, sha384, sha256, sha1, md5 }

    private enum State: Sendable {
        case sha512(SHA512_CTX), sha384(SHA512_CTX), sha256(SHA256_CTX), sha1(SHA_CTX), md5(MD5_CTX)
    }

    private var state: State

    init(_ algorithm: Algorithm) {
        switch algorithm {
        case .sha512: var c = SHA512_CTX(); SHA512_Init(&c); state = .sha512(c)
        case .sha384: var c = SHA512_CTX(); SHA384_Init(&c); state = .sha384(c)
        case .sha256: var c = SHA256_CTX(); SHA256_Init(&c); state = .sha256(c)
        case .sha1: var c = SHA_CTX(); SHA1_Init(&c); state = .sha1(c)
        case .md5: var c = MD5_CTX(); MD5_Init(&c); state = .md5(c)
        }
    }

    mutating func update(bufferPointer bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        switch state {
        case .sha512(var c): SHA512_Update(&c, base, bytes.count); state = .sha512(c)
        case .sha384(var c): SHA384_Update(&c, base, bytes.count); state = .sha384(c)
        case .sha256(var c): SHA256_Update(&c, base, bytes.count); state = .sha256(c)
        case .sha1(var c): SHA1_Update(&c, base, bytes.count); state = .sha1(c)
        case .md5(var c): MD5_Update(&c, base, bytes.count); state = .md5(c)
        }
    }

    mutating func update(_ bytes: [UInt8]) { bytes.withUnsafeBytes { update(bufferPointer: $0) } }

    /// The digest of everything fed so far.
    func finalize() -> [UInt8] {
        switch state {
        case .sha512(var c): Self.final(64) { SHA512_Final($0, &c) }
        case .sha384(var c): Self.final(48) { SHA384_Final($0, &c) }
        case .sha256(var c): Self.final(32) { SHA256_Final($0, &c) }
        case .sha1(var c): Self.final(20) { SHA1_Final($0, &c) }
        case .md5(var c): Self.final(16) { MD5_Final($0, &c) }
        }
    }

    private static func final(_ count: Int, _ body: (UnsafeMutablePointer<UInt8>) -> Int32) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            _ = body(buffer.baseAddress!)
            initialized = count
        }
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
    /// Lowercase hex, without Foundation's formatting machinery (serve's digests and upload ids too).
    public var hex: String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for byte in self {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
