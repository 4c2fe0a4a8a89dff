import UTCCalendar

/// AWS Signature Version 4 for S3, header-based, with the payload hash sent as `x-amz-content-sha256`. Pure:
/// the caller passes the time. Not libcurl's `CURLOPT_AWS_SIGV4`: 7.88.1 (Debian 12) signs the query and path
/// as sent, cannot hash a read-callback body and mishandles valueless parameters.
public struct SigV4Signer: Sendable {
    public var credentials: AWSCredentials
    public var region: String
    public var service: String

    public init(credentials: AWSCredentials, region: String, service: String = "s3") {
        self.credentials = credentials
        self.region = region
        self.service = service
    }

    /// The hash S3 expects for an empty body.
    public static let emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    /// Sent instead of a body hash when the body is not hashed before it is sent (allowed over TLS by S3).
    public static let unsignedPayload = "UNSIGNED-PAYLOAD"

    /// A request to sign: `path` is the URI path as it will be sent (already percent-encoded, see
    /// ``S3Encoding/path(_:)``); `query` is unencoded name/value pairs (a valueless parameter has value "").
    public struct Request: Sendable {
        public var method: String
        public var host: String
        public var path: String
        public var query: [(String, String)]
        public var headers: HeaderFields
        public var payloadHash: String

        public init(
            method: String, host: String, path: String, query: [(String, String)] = [], headers: HeaderFields = [:],
            payloadHash: String
        ) {
            self.method = method
            self.host = host
            self.path = path
            self.query = query
            self.headers = headers
            self.payloadHash = payloadHash
        }
    }

    /// What to send: the query string in canonical form (send exactly this) and the headers with
    /// `x-amz-date`, `x-amz-content-sha256`, the session token and `Authorization` added.
    public struct Signed: Sendable, Equatable {
        public var query: String
        public var headers: HeaderFields
        /// For tests and `-v`-style diagnostics; holds no secret.
        public var canonicalRequest: String
        public var signature: String
    }

    /// Signs `request` at `seconds` since 1970 (UTC).
    public func sign(_ request: Request, at seconds: Int64) -> Signed {
        let stamp = AWSTimestamp(seconds)
        var headers = request.headers
        headers.set("x-amz-date", stamp.dateTime)
        headers.set("x-amz-content-sha256", request.payloadHash)
        if let token = credentials.sessionToken { headers.set("x-amz-security-token", token) }

        let query = S3Encoding.canonicalQuery(request.query)
        // Repeated names are joined with commas, in the order given (SigV4's rule).
        var merged = ["host": request.host]
        for field in headers.fields where !field.name.caseInsensitiveEquals("host") {
            let (name, value) = (field.name.lowercased(), Self.trimmed(field.value))
            merged[name] = merged[name].map { $0 + "," + value } ?? value
        }
        let names = merged.keys.sorted()
        let signedHeaders = names.joined(separator: ";")
        let canonical = [
            request.method, request.path, query,
            names.map { "\($0):\(merged[$0]!)\n" }.joined(), signedHeaders, request.payloadHash,
        ].joined(separator: "\n")

        let scope = "\(stamp.date)/\(region)/\(service)/aws4_request"
        let stringToSign = ["AWS4-HMAC-SHA256", stamp.dateTime, scope, Self.sha256Hex(canonical)].joined(
            separator: "\n")
        var key = Array(("AWS4" + credentials.secretAccessKey).utf8)
        for part in [stamp.date, region, service, "aws4_request"] {
            key = MessageDigest.hmacSHA256(key: key, Array(part.utf8))
        }
        let signature = MessageDigest.hmacSHA256(key: key, Array(stringToSign.utf8)).hex
        headers.set(
            "Authorization",
            "AWS4-HMAC-SHA256 "
                + "Credential=\(credentials.accessKeyID)/\(scope),SignedHeaders=\(signedHeaders),Signature=\(signature)"
        )
        return Signed(query: query, headers: headers, canonicalRequest: canonical, signature: signature)
    }

    static func sha256Hex(_ text: String) -> String { MessageDigest.hash(.sha256, Array(text.utf8)).hex }

    /// Leading and trailing blanks removed, inner runs of blanks collapsed to one.
    static func trimmed(_ value: String) -> String {
        value.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
    }
}
