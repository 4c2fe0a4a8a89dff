/// Where a command's address leads, decided once from what the user typed.
public enum Route: Sendable, Equatable {
    /// An http(s) URL.
    case http(String)
    /// One S3 object, `s3://BUCKET/KEY`.
    case s3Object(S3Location)
    /// Every object under `s3://BUCKET/PREFIX/` (or a bare bucket).
    case s3Prefix(S3Location)

    /// Resolves `address`: a malformed `s3://` address or anything but http(s) is a usage error (exit 64).
    public init(_ address: String) throws(TransferError) {
        if Self.isS3(address) {
            let location = try S3Location.parse(address)
            self = location.isPrefix ? .s3Prefix(location) : .s3Object(location)
        } else {
            try URLCheck.validate(address)
            self = .http(address)
        }
    }

    /// True for an `s3://` address, whether or not it is well formed: it is S3's to judge (and refuse).
    public static func isS3(_ address: String) -> Bool { address.utf8.starts(with: "s3://".utf8) }
}
