import ArgumentParser
import Glibc
import ResumeKit
import ResumeMarkup

/// The options every transfer command takes, and the client they make.
struct TransferOptionGroup: ParsableArguments {
    @Option(name: [.customShort("H"), .long], help: "Extra request header 'Name: value' (repeatable).")
    var header: [String] = []

    @Option(help: "Retries after network failures: a number or 'inf'.")
    var retries = Retries(value: 10)

    @Option(name: .customLong("retry-delay"), help: "First backoff delay in seconds; it doubles up to 30 s.")
    var retryDelay: Double = 1

    @Option(name: .customLong("stall-timeout"), help: "Seconds without progress before a retry.")
    var stallTimeout = 30

    @Option(name: .customLong("limit-rate"), help: "Maximum rate in bytes a second (suffix k or M).")
    var limitRate: ByteRate?

    @Option(
        name: .customLong("checkpoint-interval"),
        help: ArgumentHelp(
            "Seconds between checkpoints of a download (fsync, then token); 0 checkpoints only when stopping. A crash "
                + "loses at most this much.")
    )
    var checkpointInterval: Double = 1

    @Flag(help: "Newline-delimited JSON events on stdout instead of the result line.")
    var json = false

    @Flag(name: [.short, .long], help: "No progress and no notes on stderr.")
    var quiet = false

    @Flag(name: [.short, .long], help: "Show libcurl's protocol trace on stderr.")
    var verbose = false

    @Option(
        name: .customLong("state-dir"),
        help: "Where tokens live (default: $RESUMECTL_STATE_DIR, $XDG_STATE_HOME/resumectl, ~/.local/state/resumectl).")
    var stateDir: String?

    @OptionGroup(title: "TLS, authentication and network (as in curl)")
    var connection: ConnectionOptionGroup

    func validate() throws {
        if retryDelay < 0 || !retryDelay.isFinite { throw ValidationError("--retry-delay must be 0 or more") }
        if stallTimeout < 1 { throw ValidationError("--stall-timeout must be at least 1 second") }
        if checkpointInterval < 0 || !checkpointInterval.isFinite {
            throw ValidationError("--checkpoint-interval must be 0 or more")
        }
        _ = try HeaderLines.parse(header)
        try connection.validate()
    }

    var store: TokenStore { TokenStore(directory: stateDir ?? TokenStore.defaultDirectory()) }

    /// The client these options make, with `credentials` (by default the ones given: a missing `-u` password
    /// is asked for here).
    func client(_ credentials: Credentials? = nil) -> TransferClient {
        var options = TransferOptions()
        options.retry = RetryPolicy(maxRetries: retries.value, baseDelay: retryDelay)
        options.transport.stallTimeout = stallTimeout
        options.transport.verbose = verbose
        if let rate = limitRate?.bytesPerSecond {
            options.transport.maxReceiveRate = rate
            options.transport.maxSendRate = rate
        }
        options.transport.connection = connection.settings
        options.transport.credentials = credentials ?? connection.credentials
        options.computeSHA256 = json
        options.announcesID = json
        options.checkpointInterval = checkpointInterval == 0 ? .infinity : checkpointInterval
        return TransferClient(store: store, options: options, s3Answers: S3Responses(), htmlLinks: HTMLLinks())
    }

    /// The client for a new transfer of `url`, and the URL it runs: a password in the URL is a `-u` password
    /// (the URL, which the token keeps, loses it, and `resume` asks for it again); `-u` wins over it.
    func client(taking url: String) -> (TransferClient, url: String) {
        var credentials = connection.credentials
        guard let login = Redact.login(in: url), let password = login.password else {
            return (client(credentials), url)
        }
        if credentials.user == nil {
            credentials.user = login.user
            credentials.password = password
        }
        return (client(credentials), login.url)
    }

    /// The client for resuming a token of `url`. A URL that names a user keeps no password: without `-u` or
    /// netrc it is asked for on the terminal, as `-u USER` asks for it.
    func client(resuming url: String?) throws -> TransferClient {
        var credentials = connection.credentials
        if let url, let login = Redact.login(in: url), login.password == nil, !credentials.authenticates {
            guard isatty(0) != 0 else {
                throw Runner.fail(
                    TransferError(
                        .usage,
                        "the token's URL names user '\(login.user)', whose password is never stored, and stdin is not "
                            + "a terminal to ask for it: give -u \(login.user):PASSWORD or --netrc"
                    ),
                    json: json)
            }
            credentials.user = login.user
            credentials.password = PasswordPrompt.ask("Enter host password for user '\(login.user)': ")
        }
        return client(credentials)
    }
}
