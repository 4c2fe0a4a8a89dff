import FoundationEssentials
import Glibc

/// An object (or prefix) on one S3 endpoint, with the credentials to sign for it: everything a request needs.
public struct S3Target: Sendable {
    public var location: S3Location
    public var endpoint: S3Endpoint
    public var settings: S3Settings
    /// The profile the user named (`--profile`, `AWS_PROFILE`), which a resume reads again; nil otherwise.
    public var chosenProfile: String?

    /// The target of a new transfer: the user's choices, else the environment and `~/.aws`, as the AWS CLI reads them.
    public init(_ location: S3Location, choices: S3Choices, forcePathStyle: Bool, environment: [String: String] = S3Target.environment)
        throws(TransferError)
    {
        settings = try AWSConfiguration.resolve(choices, environment: environment, readFile: S3Target.readFile)
        endpoint = try S3Endpoint(endpoint: settings.endpoint, region: settings.region, forcePathStyle: forcePathStyle)
        self.location = location
        chosenProfile = choices.profile ?? environment["AWS_PROFILE"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The target a token names; credentials are read anew (a token never holds them).
    public init(_ state: ResumeToken.S3State, environment: [String: String] = S3Target.environment) throws(TransferError) {
        try self.init(
            S3Location(bucket: state.bucket, key: state.key),
            choices: S3Choices(profile: state.profile, region: state.region, endpoint: state.endpoint),
            forcePathStyle: state.pathStyle, environment: environment)
    }

    /// What a token keeps of the target: names and places, never a key.
    public var state: ResumeToken.S3State {
        ResumeToken.S3State(
            endpoint: endpoint.scheme + "://" + endpoint.authority, region: settings.region, bucket: location.bucket,
            key: location.key, profile: chosenProfile, pathStyle: endpoint.usesPathStyle(for: location))
    }

    /// The URL of `key` (by default the target's) with a canonical query.
    public func url(key: String? = nil, query: [(String, String)] = []) -> String {
        endpoint.url(S3Location(bucket: location.bucket, key: key ?? location.key), query: S3Encoding.canonicalQuery(query))
    }

    /// The bucket's URL, for listings.
    public func bucketURL(query: [(String, String)]) -> String { url(key: "", query: query) }

    public var signer: S3RequestSigner {
        S3RequestSigner(signer: SigV4Signer(credentials: settings.credentials, region: settings.region))
    }

    /// Settings whose every request is signed for this target.
    public func signing(_ settings: TransportSettings) -> TransportSettings {
        var signed = settings
        signed.signing = SigningHook(signer)
        return signed
    }

    public static var environment: [String: String] { ProcessInfo.processInfo.environment }

    static func readFile(_ path: String) -> String? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }
}

/// Signs each request as it is sent, with the time of sending: a retry an hour later is signed anew.
public struct S3RequestSigner: RequestSigner {
    let signer: SigV4Signer
    /// Seconds since 1970 at signing; tests fix it.
    var clock: @Sendable () -> Int64 = { Int64(time(nil)) }

    public var identity: String { "\(signer.credentials.accessKeyID)@\(signer.region)" }

    public func sign(_ request: inout TransferRequest) {
        guard let parts = Self.split(request.url) else { return }
        let hash = request.headers["x-amz-content-sha256"]
            ?? (request.body == nil ? SigV4Signer.emptyPayloadHash : SigV4Signer.unsignedPayload)
        var headers = request.headers
        headers.remove("x-amz-content-sha256")
        // Not signed (as AWS's SDKs leave it out): a proxy may drop or answer it.
        let expect = headers["Expect"]
        headers.remove("Expect")
        let signed = signer.sign(
            SigV4Signer.Request(method: request.method, host: parts.host, path: parts.path, query: parts.query,
                headers: headers, payloadHash: hash),
            at: clock())
        request.url = parts.origin + parts.path + (signed.query.isEmpty ? "" : "?" + signed.query)
        request.headers = signed.headers
        if let expect { request.headers.set("Expect", expect) }
    }

    /// `scheme://authority`, the authority, the (already encoded) path, and the query decoded into pairs.
    static func split(_ url: String) -> (origin: String, host: String, path: String, query: [(String, String)])? {
        guard let colon = url.firstIndex(of: ":"), url[colon...].hasPrefix("://") else { return nil }
        let schemeEnd = url.index(colon, offsetBy: 3)
        let afterScheme = url[schemeEnd...]
        let pathStart = afterScheme.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? afterScheme.endIndex
        let host = String(afterScheme[..<pathStart])
        let rest = afterScheme[pathStart...]
        let queryStart = rest.firstIndex(of: "?")
        var path = String(rest[..<(queryStart ?? rest.endIndex)])
        if path.isEmpty { path = "/" }
        var query: [(String, String)] = []
        if let queryStart {
            for item in rest[rest.index(after: queryStart)...].split(separator: "&", omittingEmptySubsequences: true) {
                let pair = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                query.append((OutputPath.percentDecoded(String(pair[0])), pair.count > 1 ? OutputPath.percentDecoded(String(pair[1])) : ""))
            }
        }
        return (String(url[..<schemeEnd]) + host, host, path, query)
    }
}
