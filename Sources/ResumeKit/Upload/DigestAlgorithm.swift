import Crypto
import FoundationEssentials

/// The digests an upload protocol may ask for over a request body, strongest first.
public enum DigestAlgorithm: String, Sendable, CaseIterable, Codable {
    case sha512, sha384, sha256, sha1, md5

    /// The strongest of the names a server lists (case-insensitive), nil when none is known here.
    public static func strongest(of names: [String]) -> DigestAlgorithm? {
        let offered = Set(names.map { $0.trimmingSpaces().lowercased() })
        return allCases.first { offered.contains($0.rawValue) }
    }

    /// A running hash of this kind.
    func hasher() -> any BodyHasher {
        switch self {
        case .sha512: SHA512()
        case .sha384: SHA384()
        case .sha256: SHA256()
        case .sha1: Insecure.SHA1()
        case .md5: Insecure.MD5()
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
