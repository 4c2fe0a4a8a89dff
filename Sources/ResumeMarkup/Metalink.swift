import ResumeKit

/// A Metalink 4 document (RFC 5854): the files it describes, each with its name, size, hashes (whole and by
/// piece) and the URLs that serve it. Read from bytes alone, with no network and no entity; everything a
/// hostile document could use to write outside the target, to exhaust memory or disk, or to pass bytes off as
/// verified, is refused with one line (``MetalinkError``).
public struct Metalink: Sendable, Equatable {
    public struct File: Sendable, Equatable {
        /// A relative path of plain names (RFC 5854 §4.1.2.1: no `..`, no leading `/`).
        public var name: String
        public var size: Int64?
        /// Whole-file hashes, strongest first: SHA-512, SHA-384, SHA-256; SHA-1 alone when nothing stronger is
        /// given (see ``usesSHA1``). MD5 and unknown types are left out.
        public var hashes: [Hash]
        /// The strongest `<pieces>` of an accepted algorithm, if any.
        public var pieces: Pieces?
        /// `<url>`s by priority (1 first, none last), in document order among equals. `<metaurl>`s (torrents)
        /// are left out.
        public var urls: [Mirror]

        public init(name: String, size: Int64? = nil, hashes: [Hash] = [], pieces: Pieces? = nil, urls: [Mirror] = []) {
            self.name = name
            self.size = size
            self.hashes = hashes
            self.pieces = pieces
            self.urls = urls
        }

        /// Whether anything vouches for the bytes: a whole-file hash or piece hashes. Bytes from several
        /// servers can be put together only when this holds.
        public var isVerifiable: Bool { !hashes.isEmpty || pieces != nil }

        /// SHA-1 is the strongest hash given (whole file or pieces): accepted, and worth a warning.
        public var usesSHA1: Bool {
            hashes.first?.algorithm == "sha-1" || pieces?.algorithm == "sha-1"
        }

        /// The whole-file hash of `algorithm` (`sha-256`…), lowercase hex.
        public func hex(_ algorithm: String) -> String? { hashes.first { $0.algorithm == algorithm }?.hex }
    }

    public struct Hash: Sendable, Equatable {
        /// IANA's name, lowercase: `sha-256`, `sha-384`, `sha-512` or `sha-1`.
        public var algorithm: String
        /// Lowercase, of the algorithm's length.
        public var hex: String

        public init(algorithm: String, hex: String) {
            self.algorithm = algorithm
            self.hex = hex
        }
    }

    /// Hashes of consecutive pieces of `length` bytes (the last one shorter), in order (RFC 5854 §4.2.10): the
    /// token's own type, so a download keeps them as read.
    public typealias Pieces = ResumeToken.Pieces

    public struct Mirror: Sendable, Equatable {
        public var url: String
        /// 1 (most preferred) to 999999; nil when not given (or not in that range).
        public var priority: Int?
        /// ISO 3166-1 alpha-2 country code, lowercase, when given.
        public var location: String?

        public init(url: String, priority: Int? = nil, location: String? = nil) {
            self.url = url
            self.priority = priority
            self.location = location
        }
    }

    public var files: [File]

    public init(files: [File]) { self.files = files }

    /// RFC 5854 §4's namespace; a root in any other (Metalink 3's `http://www.metalinker.org/`) is refused.
    public static let namespace = "urn:ietf:params:xml:ns:metalink"
    /// A published Metalink is kilobytes; one of 10^6 URLs is tens of megabytes.
    public static let maxBytes = 16 << 20
    public static let maxFiles = 10_000
    public static let maxURLs = 1_000
    /// Larger than any published image; a larger claim would have a disk filled before a byte is checked.
    public static let maxSize: Int64 = 1 << 39
    /// Accepted hash types, strongest first, with their lengths in hex digits.
    public static let algorithms: [(name: String, hexDigits: Int)] = [
        ("sha-512", 128), ("sha-384", 96), ("sha-256", 64), ("sha-1", 40),
    ]

    /// Reads a Metalink 4 document.
    /// - Parameter requireHashes: refuse a file that has neither a whole-file hash nor piece hashes
    ///   (``MetalinkError/Kind/noHash``). Without it such a file is returned with ``File/isVerifiable`` false,
    ///   for a caller that fetches it from one URL as it would any download.
    public static func parse(_ bytes: [UInt8], requireHashes: Bool = true) throws(MetalinkError) -> Metalink {
        try MetalinkReader(requireHashes: requireHashes).read(bytes)
    }
}
