/// Everything an S3 transfer needs from the user's AWS set-up.
public struct S3Settings: Sendable, Equatable {
    public var credentials: AWSCredentials
    public var region: String
    /// `--endpoint-url` or its variables; nil means AWS's own regional endpoint.
    public var endpoint: String?
    /// The profile the credentials or region came from (kept in tokens: a name, never a key).
    public var profile: String
}
