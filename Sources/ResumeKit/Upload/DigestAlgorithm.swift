import FoundationEssentials

/// The digests an upload protocol may ask for over a request body, strongest first; then the CRCs of
/// S3's flexible checksums, which catch damage in transit but are no digest to choose for tus.
public enum DigestAlgorithm: String, Sendable, CaseIterable, Codable {
    case sha512, sha384, sha256, sha1, md5
    case crc32, crc32c

    /// The strongest of the names a server lists (case-insensitive), nil when none is known here.
    public static func strongest(of names: [String]) -> DigestAlgorithm? {
        let offered = Set(names.map { $0.trimmingSpaces().lowercased() })
        return allCases.first { !$0.isCRC && offered.contains($0.rawValue) }
    }

    var isCRC: Bool { self == .crc32 || self == .crc32c }

    /// The digest of bytes in memory (a part `serve --store s3://` sends; S3's composite of part digests).
    public func digest(_ bytes: [UInt8]) -> [UInt8] {
        var hasher = hasher()
        bytes.withUnsafeBytes { hasher.update(bufferPointer: $0) }
        return hasher.digestBytes()
    }

    /// A running hash of this kind.
    func hasher() -> any BodyHasher {
        switch self {
        case .sha512: MessageDigest(.sha512)
        case .sha384: MessageDigest(.sha384)
        case .sha256: MessageDigest(.sha256)
        case .sha1: MessageDigest(.sha1)
        case .md5: MessageDigest(.md5)
        case .crc32: HardwareCRC(.crc32)
        case .crc32c: HardwareCRC(.crc32c)
        }
    }
}
