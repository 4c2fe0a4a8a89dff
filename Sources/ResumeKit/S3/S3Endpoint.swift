/// Where S3 requests go and how a bucket is addressed: path style (`https://host/BUCKET/KEY`) for endpoints
/// given as an IP address or with a port (MinIO, Ceph, a laptop), with `--path-style`, and for bucket names
/// that cannot be a host label (or have dots, which break TLS name checks); else `https://BUCKET.host/KEY`.
public struct S3Endpoint: Sendable, Equatable {
    public var scheme: String
    /// Host name with its port, if any, as it goes into the `Host` header.
    public var authority: String
    public var forcePathStyle: Bool
}

extension S3Endpoint {
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
        let scheme =
            parts.count >= 3 && parts[0].hasSuffix(":") && parts[1].isEmpty ? parts[0].dropLast().lowercased() : ""
        guard scheme == "http" || scheme == "https" else {
            throw TransferError(.usage, "endpoint \(endpoint) must be an http:// or https:// URL")
        }
        let authority = String(parts[2].prefix { $0 != "?" && $0 != "#" })
        guard !authority.isEmpty, !authority.contains("@") else {
            throw TransferError(.usage, "endpoint \(endpoint) must name a host (and no user)")
        }
        self.init(scheme: scheme, authority: authority, forcePathStyle: forcePathStyle)
    }

    func usesPathStyle(for location: S3Location) -> Bool {
        // An IP address or a host with a port has no bucket subdomains.
        let bareHost =
            authority.hasPrefix("[") || authority.contains(":")
            || authority.split(separator: ".").count == 4 && authority.allSatisfy { $0.isNumber || $0 == "." }
        return forcePathStyle || bareHost || !location.isDNSCompatible
            || (scheme == "https" && location.bucket.contains("."))
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
