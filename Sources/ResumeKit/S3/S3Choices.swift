/// What the user chose on the command line; each nil falls back to the environment and the AWS files.
public struct S3Choices: Sendable, Equatable {
    public var profile: String?
    public var region: String?
    public var endpoint: String?

    public init(profile: String? = nil, region: String? = nil, endpoint: String? = nil) {
        self.profile = profile
        self.region = region
        self.endpoint = endpoint
    }
}
