/// Secrets for one run: never written to a token, a log or an event. `resume` needs them given again.
public struct Credentials: Sendable, Equatable {
    /// `-u USER:PASSWORD`, sent with HTTP Basic only to the origin the user named.
    public var user: String?
    public var password: String?
    /// `--netrc` (required) or `--netrc-optional`; nil reads no netrc file, as curl does.
    public var netrc: NetrcMode?
    /// `--netrc-file FILE` instead of `~/.netrc`.
    public var netrcFile: String?
    /// Passphrase of the client certificate's key (`--cert FILE:PASS`).
    public var keyPassword: String?

    public enum NetrcMode: Sendable, Equatable { case required, optional }

    public init() {}

    /// True when the server may be sent a user name and password.
    public var authenticates: Bool { user != nil || netrc != nil || netrcFile != nil }
}
