/// An access key pair. Its description never shows the secret or the session token, so that no log,
/// error line or `--json` event can carry them by accident.
public struct AWSCredentials: Sendable, Equatable, CustomStringConvertible {
    public var accessKeyID: String
    public var secretAccessKey: String
    public var sessionToken: String?

    public init(accessKeyID: String, secretAccessKey: String, sessionToken: String? = nil) {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
    }

    public var description: String { "access key \(accessKeyID)" }
}

/// Everything an S3 transfer needs from the user's AWS set-up.
public struct S3Settings: Sendable, Equatable {
    public var credentials: AWSCredentials
    public var region: String
    /// `--endpoint-url` or its variables; nil means AWS's own regional endpoint.
    public var endpoint: String?
    /// The profile the credentials or region came from (kept in tokens: a name, never a key).
    public var profile: String
}

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

/// The INI dialect of `~/.aws/credentials` and `~/.aws/config`: `[section]` headers, `key = value` lines,
/// `#`/`;` comments. Indented lines continue a nested setting (`s3 =` blocks) and are not ours to read.
struct ProfileFile: Equatable {
    var sections: [String: [String: String]]

    init(sections: [String: [String: String]]) { self.sections = sections }

    init(_ text: String) {
        var sections: [String: [String: String]] = [:]
        var current: String?
        for raw in text.split(omittingEmptySubsequences: true, whereSeparator: { $0 == "\n" || $0 == "\r" }) {
            if raw.first == " " || raw.first == "\t" { continue }
            let line = raw.trimmingSpaces()
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("["), line.hasSuffix("]") {
                let name = String(line.dropFirst().dropLast()).trimmingSpaces()
                // `[profile  x]` and `[profile x]` name the same profile.
                let words = name.split(separator: " ", omittingEmptySubsequences: true)
                current = words.joined(separator: " ")
                if sections[current!] == nil { sections[current!] = [:] }
                continue
            }
            guard let section = current, let equals = line.firstIndex(of: "=") else { continue }
            let key = String(line[..<equals]).trimmingSpaces().lowercased()
            let value = String(line[line.index(after: equals)...]).trimmingSpaces()
            sections[section]![key] = value
        }
        self.sections = sections
    }
}
