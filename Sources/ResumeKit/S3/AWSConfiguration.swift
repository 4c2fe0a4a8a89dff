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
        let credentialsFile = readFile(credentialsPath).map(ProfileFile.init) ?? ProfileFile(sections: [:])
        let configFile = readFile(configPath).map(ProfileFile.init) ?? ProfileFile(sections: [:])
        let fromCredentials = credentialsFile.sections[profile] ?? [:]
        let fromConfig = configFile.sections[profile == "default" ? "default" : "profile " + profile] ?? [:]

        func fromProfile() -> AWSCredentials? {
            for section in [fromCredentials, fromConfig] {
                if let id = nonEmpty(section["aws_access_key_id"]), let secret = nonEmpty(section["aws_secret_access_key"]) {
                    return AWSCredentials(accessKeyID: id, secretAccessKey: secret, sessionToken: nonEmpty(section["aws_session_token"]))
                }
            }
            return nil
        }
        func fromEnvironment() -> AWSCredentials? {
            guard let id = nonEmpty(environment["AWS_ACCESS_KEY_ID"]), let secret = nonEmpty(environment["AWS_SECRET_ACCESS_KEY"])
            else { return nil }
            return AWSCredentials(accessKeyID: id, secretAccessKey: secret, sessionToken: nonEmpty(environment["AWS_SESSION_TOKEN"]))
        }
        let found = nonEmpty(choices.profile) != nil ? (fromProfile() ?? fromEnvironment()) : (fromEnvironment() ?? fromProfile())
        guard let credentials = found else {
            throw TransferError(
                .failed,
                "no AWS credentials found: looked in AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, profile '\(profile)' of \(credentialsPath) and of \(configPath)")
        }
        let region = nonEmpty(choices.region) ?? nonEmpty(environment["AWS_REGION"]) ?? nonEmpty(environment["AWS_DEFAULT_REGION"])
            ?? nonEmpty(fromConfig["region"]) ?? "us-east-1"
        let endpoint = nonEmpty(choices.endpoint) ?? nonEmpty(environment["AWS_ENDPOINT_URL_S3"])
            ?? nonEmpty(environment["AWS_ENDPOINT_URL"]) ?? nonEmpty(fromConfig["endpoint_url"])
        return S3Settings(credentials: credentials, region: region, endpoint: endpoint, profile: profile)
    }

    private static func nonEmpty(_ text: String?) -> String? {
        guard let text, !text.isEmpty else { return nil }
        return text
    }
}
