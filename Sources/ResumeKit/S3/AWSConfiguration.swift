/// Reads credentials, region and endpoint the way the AWS CLI does, so existing set-ups work unchanged.
///
/// Credentials: an explicit `--profile` first; else `AWS_ACCESS_KEY_ID` + `AWS_SECRET_ACCESS_KEY`
/// (+ `AWS_SESSION_TOKEN`); else the profile (`AWS_PROFILE`, else `default`) in the shared credentials file
/// (`AWS_SHARED_CREDENTIALS_FILE`, else `~/.aws/credentials`), then in the config file (`AWS_CONFIG_FILE`,
/// else `~/.aws/config`, sections `[profile NAME]` and `[default]`). Region: `--region`, `AWS_REGION`,
/// `AWS_DEFAULT_REGION`, the profile's `region`, else `us-east-1`. Endpoint: `--endpoint-url`,
/// `AWS_ENDPOINT_URL_S3`, `AWS_ENDPOINT_URL`, the profile's `endpoint_url`, else AWS's.
public enum AWSConfiguration {
    /// - Parameters:
    ///   - choices: what the command line named (profile, region, endpoint); each wins over the files.
    ///   - environment: the variables to read (`AWS_*`); tests pass their own.
    ///   - readFile: the text of a file, or nil when it cannot be read (tests pass fixtures).
    public static func resolve(
        _ choices: S3Choices, environment: [String: String], readFile: (String) -> String?
    ) throws(TransferError) -> S3Settings {
        let home = environment["HOME"] ?? "~"
        let credentialsPath = nonEmpty(environment["AWS_SHARED_CREDENTIALS_FILE"]) ?? home + "/.aws/credentials"
        let configPath = nonEmpty(environment["AWS_CONFIG_FILE"]) ?? home + "/.aws/config"
        let profile = nonEmpty(choices.profile) ?? nonEmpty(environment["AWS_PROFILE"]) ?? "default"
        let configSection = profile == "default" ? "default" : "profile " + profile
        let fromCredentials = ProfileFile(readFile(credentialsPath) ?? "").sections[profile] ?? [:]
        let fromConfig = ProfileFile(readFile(configPath) ?? "").sections[configSection] ?? [:]

        // A key pair by the files' names (`aws_access_key_id` …), which are the variables' in lower case.
        func keyPair(_ value: (String) -> String?) -> AWSCredentials? {
            guard let id = nonEmpty(value("aws_access_key_id")), let secret = nonEmpty(value("aws_secret_access_key"))
            else { return nil }
            return AWSCredentials(
                accessKeyID: id, secretAccessKey: secret, sessionToken: nonEmpty(value("aws_session_token")))
        }
        let fromProfile = keyPair { fromCredentials[$0] } ?? keyPair { fromConfig[$0] }
        let fromEnvironment = keyPair { environment[$0.uppercased()] }
        let found = nonEmpty(choices.profile) != nil ? fromProfile ?? fromEnvironment : fromEnvironment ?? fromProfile
        guard let credentials = found else {
            throw TransferError(
                .failed,
                "no AWS credentials found: looked in AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, profile '\(profile)' of "
                    + "\(credentialsPath) and of \(configPath)"
            )
        }
        let region =
            nonEmpty(choices.region) ?? nonEmpty(environment["AWS_REGION"]) ?? nonEmpty(
                environment["AWS_DEFAULT_REGION"])
            ?? nonEmpty(fromConfig["region"]) ?? "us-east-1"
        let endpoint =
            nonEmpty(choices.endpoint) ?? nonEmpty(environment["AWS_ENDPOINT_URL_S3"])
            ?? nonEmpty(environment["AWS_ENDPOINT_URL"]) ?? nonEmpty(fromConfig["endpoint_url"])
        return S3Settings(credentials: credentials, region: region, endpoint: endpoint, profile: profile)
    }

    private static func nonEmpty(_ text: String?) -> String? {
        guard let text, !text.isEmpty else { return nil }
        return text
    }
}
