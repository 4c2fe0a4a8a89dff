import Crypto
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

    /// A running hash of this kind.
    func hasher() -> any BodyHasher {
        switch self {
        case .sha512: SHA512()
        case .sha384: SHA384()
        case .sha256: SHA256()
        case .sha1: Insecure.SHA1()
        case .md5: Insecure.MD5()
        case .crc32: HardwareCRC(.crc32)
        case .crc32c: HardwareCRC(.crc32c)
        }
    }
}

/// swift-crypto's hash functions behind one face, so a body digest is computed by one loop.
protocol BodyHasher {
    mutating func update(bufferPointer: UnsafeRawBufferPointer)
    func digestBytes() -> [UInt8]
}

extension HashFunction {
    func digestBytes() -> [UInt8] { Array(finalize()) }
}

extension SHA512: BodyHasher {}
extension SHA384: BodyHasher {}
extension SHA256: BodyHasher {}
extension Insecure.SHA1: BodyHasher {}
extension Insecure.MD5: BodyHasher {}
extension HardwareCRC: BodyHasher {
    mutating func update(bufferPointer: UnsafeRawBufferPointer) { update(bufferPointer) }
    func digestBytes() -> [UInt8] { bytes }
}
