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
            throw TransferError(
                .usage,
                "'\(bucket)' in \(text) is not a bucket name (3 to 63 letters, digits, dots or hyphens, a letter or "
                    + "digit at both ends)"
            )
        }
        guard !key.utf8.contains(where: { $0 == 0 || $0 == 10 || $0 == 13 }) else {
            throw TransferError(.usage, "the key in \(text) holds a control character")
        }
        return S3Location(bucket: bucket, key: key)
    }

    public var isPrefix: Bool { key.isEmpty || key.hasSuffix("/") }

    public var description: String { "s3://\(bucket)/\(key)" }

    /// S3's naming rules, with the upper-case letters and underscores that old us-east-1 buckets may have:
    /// 3 to 63 characters, a letter or digit at both ends, no two dots in a row.
    private static func validBucket(_ name: String) -> Bool {
        guard (3...63).contains(name.utf8.count), let first = name.first, let last = name.last, isAlphanumeric(first),
            isAlphanumeric(last), !name.contains("..")
        else { return false }
        return name.allSatisfy { isAlphanumeric($0) || $0 == "." || $0 == "-" || $0 == "_" }
    }

    private static func isAlphanumeric(_ c: Character) -> Bool { c.isASCII && (c.isLetter || c.isNumber) }

    /// Bucket names that can be the first label of a host name (virtual-hosted style).
    var isDNSCompatible: Bool {
        guard !bucket.isEmpty, bucket.first != "-", bucket.last != "-", !bucket.contains("..") else { return false }
        return bucket.allSatisfy { ($0.isASCII && ($0.isLowercase || $0.isNumber)) || $0 == "." || $0 == "-" }
    }
}
