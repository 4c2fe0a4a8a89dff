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
    public init(
        _ location: S3Location, choices: S3Choices, forcePathStyle: Bool,
        environment: [String: String] = S3Target.environment
    )
        throws(TransferError)
    {
        settings = try AWSConfiguration.resolve(choices, environment: environment, readFile: S3Target.readFile)
        endpoint = try S3Endpoint(endpoint: settings.endpoint, region: settings.region, forcePathStyle: forcePathStyle)
        self.location = location
        chosenProfile = choices.profile ?? environment["AWS_PROFILE"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The target a token names; credentials are read anew (a token never holds them).
    public init(_ state: ResumeToken.S3State, environment: [String: String] = S3Target.environment)
        throws(TransferError)
    {
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
        endpoint.url(
            S3Location(bucket: location.bucket, key: key ?? location.key), query: S3Encoding.canonicalQuery(query))
    }

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
