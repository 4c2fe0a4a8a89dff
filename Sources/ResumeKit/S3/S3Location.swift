/// An `s3://BUCKET/KEY` the user named. A key that is empty or ends in `/` is a prefix (every object under it).
public struct S3Location: Sendable, Equatable, CustomStringConvertible {
    public var bucket: String
    public var key: String

    public init(bucket: String, key: String) {
        self.bucket = bucket
        self.key = key
    }

    /// Parses `s3://BUCKET/KEY`; a malformed one is a usage error (exit 64).
    public static func parse(_ text: String) throws(TransferError) -> S3Location {
        guard Route.isS3(text) else { throw TransferError(.usage, "\(text) is not an s3://BUCKET/KEY URL") }
        let rest = text.dropFirst(5)
        let slash = rest.firstIndex(of: "/")
        let bucket = String(rest[..<(slash ?? rest.endIndex)])
        let key = slash.map { String(rest[rest.index(after: $0)...]) } ?? ""
        guard validBucket(bucket) else {
            throw TransferError(.usage, "'\(bucket)' in \(text) is not a bucket name (3 to 63 letters, digits, dots or hyphens, a letter or digit at both ends)")
        }
        guard !key.utf8.contains(where: { $0 == 0 || $0 == 10 || $0 == 13 }) else { throw TransferError(.usage, "the key in \(text) holds a control character") }
        return S3Location(bucket: bucket, key: key)
    }

    public var isPrefix: Bool { key.isEmpty || key.hasSuffix("/") }

    public var description: String { "s3://\(bucket)/\(key)" }

    /// S3's naming rules, with the upper-case letters and underscores that old us-east-1 buckets may have:
    /// 3 to 63 characters, a letter or digit at both ends, no two dots in a row.
    private static func validBucket(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard (3...63).contains(bytes.count), isAlphanumeric(bytes.first!), isAlphanumeric(bytes.last!), !name.contains("..") else {
            return false
        }
        return bytes.allSatisfy { b in
            (b >= UInt8(ascii: "a") && b <= UInt8(ascii: "z")) || (b >= UInt8(ascii: "A") && b <= UInt8(ascii: "Z"))
                || (b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9")) || b == UInt8(ascii: ".") || b == UInt8(ascii: "-")
                || b == UInt8(ascii: "_")
        }
    }

    private static func isAlphanumeric(_ b: UInt8) -> Bool {
        (b >= UInt8(ascii: "a") && b <= UInt8(ascii: "z")) || (b >= UInt8(ascii: "A") && b <= UInt8(ascii: "Z"))
            || (b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9"))
    }

    /// Bucket names that can be the first label of a host name (virtual-hosted style).
    var isDNSCompatible: Bool {
        let bytes = Array(bucket.utf8)
        guard let first = bytes.first, let last = bytes.last, first != UInt8(ascii: "-"), last != UInt8(ascii: "-"),
            !bucket.contains("..")
        else { return false }
        return bytes.allSatisfy { b in
            (b >= UInt8(ascii: "a") && b <= UInt8(ascii: "z")) || (b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9"))
                || b == UInt8(ascii: ".") || b == UInt8(ascii: "-")
        }
    }
}

/// Where S3 requests go and how a bucket is addressed.
///
/// Path style (`https://host/BUCKET/KEY`) for endpoints given as an IP address or with a port (MinIO,
/// Ceph, a test server on a laptop), with `--path-style`, and for bucket names that cannot be a host label (or
/// would break TLS name checks, having dots); virtual-hosted style (`https://BUCKET.host/KEY`) otherwise.
public struct S3Endpoint: Sendable, Equatable {
    public var scheme: String
    /// Host name with its port, if any, as it goes into the `Host` header.
    public var authority: String
    public var forcePathStyle: Bool

    /// - Parameters:
    ///   - endpoint: a user's endpoint URL, or nil for AWS's regional endpoint.
    ///   - region: the region requests are signed for (and AWS's endpoint is named after).
    ///   - forcePathStyle: `/BUCKET/KEY` on the endpoint's host rather than `BUCKET.host/KEY`.
    public init(endpoint: String?, region: String, forcePathStyle: Bool = false) throws(TransferError) {
        guard let endpoint else {
            self.init(scheme: "https", authority: "s3.\(region).amazonaws.com", forcePathStyle: forcePathStyle)
            return
        }
        let parts = endpoint.split(separator: "/", maxSplits: 3, omittingEmptySubsequences: false)
        let scheme = parts.count >= 3 && parts[0].hasSuffix(":") && parts[1].isEmpty ? parts[0].dropLast().lowercased() : ""
        guard scheme == "http" || scheme == "https" else {
            throw TransferError(.usage, "endpoint \(endpoint) must be an http:// or https:// URL")
        }
        let authority = String(parts[2].prefix { $0 != "?" && $0 != "#" })
        guard !authority.isEmpty, !authority.contains("@") else {
            throw TransferError(.usage, "endpoint \(endpoint) must name a host (and no user)")
        }
        self.init(scheme: scheme, authority: authority, forcePathStyle: forcePathStyle)
    }

    init(scheme: String, authority: String, forcePathStyle: Bool) {
        self.scheme = scheme
        self.authority = authority
        self.forcePathStyle = forcePathStyle
    }

    /// True when the endpoint is an IP address or carries a port: such hosts have no bucket subdomains.
    var isBareHost: Bool {
        if authority.hasPrefix("[") { return true }
        if authority.contains(":") { return true }
        return authority.split(separator: ".").count == 4 && authority.allSatisfy { $0.isNumber || $0 == "." }
    }

    func usesPathStyle(for location: S3Location) -> Bool {
        forcePathStyle || isBareHost || !location.isDNSCompatible || (scheme == "https" && location.bucket.contains("."))
    }

    /// The request target of an object (or of the bucket, with an empty key): host and encoded path.
    public func address(_ location: S3Location) -> (host: String, path: String) {
        let key = S3Encoding.path(location.key)
        if usesPathStyle(for: location) {
            return (authority, "/" + S3Encoding.component(location.bucket) + (key.isEmpty ? "" : "/" + key))
        }
        return (location.bucket + "." + authority, "/" + key)
    }

    /// The full URL to send: address plus the canonical query (as signed).
    public func url(_ location: S3Location, query: String = "") -> String {
        let (host, path) = address(location)
        return "\(scheme)://\(host)\(path)" + (query.isEmpty ? "" : "?" + query)
    }
}
