import ArgumentParser
import FoundationEssentials
import ResumeServer

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// `resumectl serve [DIR]`: ranged downloads and resumable uploads for one folder.
@main
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resumectl serve",
        abstract: "Serve a folder over HTTP: ranged downloads and resumable uploads.",
        discussion: """
            GET and HEAD serve the files below <dir> with strong ETags and single byte ranges \
            (Range, If-Range). PUT or POST to a path stores the body there; with the headers of \
            draft-ietf-httpbis-resumable-upload (interop versions 3, 5, 6 and 8) or of tus 1.0 an \
            interrupted upload can be resumed, also after serve itself restarted: unfinished uploads \
            are kept in <dir>/.resumectl-uploads. Dot-files are never served, and an existing file is never replaced \
            without --overwrite. Prints `listening on URL` once ready, then one line per request on \
            standard error. SIGTERM or SIGINT stops it gracefully (new connections refused, requests \
            in progress given --drain-seconds, every upload's bytes made durable, exit 0); a second \
            one stops it at once. Beyond loopback it starts only with \
            --htpasswd, --read-only or --allow-anonymous-uploads.
            """
    )

    /// Usage errors are one line on stderr, as for every resumectl command.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            let code = exitCode(for: error)
            let message = fullMessage(for: error)
            if code == .success {
                if !message.isEmpty { print(message) }
            } else if !message.isEmpty {
                let line = (message.split(separator: "\n").first.map(String.init) ?? message).replacingPrefix("Error: ")
                Standard.error("resumectl: \(line) (see 'resumectl serve --help')")
            }
            Glibc.exit(code.rawValue)
        }
    }

    @Argument(help: ArgumentHelp("Folder to serve.", valueName: "dir"), completion: .directory)
    var directory: String = "."

    @Option(help: "Address to listen on.")
    var host: String = "127.0.0.1"

    @Option(help: "Port to listen on; 0 picks a free one.")
    var port: Int = 8080

    @Flag(help: "Refuse uploads.")
    var readOnly: Bool = false

    @Option(help: ArgumentHelp("Seconds an interrupted upload is kept for its client to resume.", valueName: "seconds"))
    var uploadTimeout: Double = 3600

    @Flag(help: "Let an upload replace a file that exists (without it: 409 Conflict, the file stays).")
    var overwrite: Bool = false

    @Option(help: ArgumentHelp("Refuse uploads larger than this (413), e.g. 500M or 20G.", valueName: "size"))
    var maxUploadSize: ByteSize?

    @Option(
        help: ArgumentHelp("Uploads that may be in progress at once (503 with Retry-After beyond).", valueName: "n"))
    var maxUploads: Int?

    @Option(
        help: ArgumentHelp(
            "Seconds a client has to send a request head before its connection is closed.", valueName: "seconds"))
    var headerTimeout: Double = 30

    @Option(
        help: ArgumentHelp(
            "Seconds a request body may send nothing before its connection is closed (an upload keeps what arrived).",
            valueName: "seconds"))
    var bodyTimeout: Double = 60

    @Option(
        help: ArgumentHelp(
            "Serve HTTPS with this PEM certificate chain (the server's first, then intermediates).", valueName: "file"),
        completion: .file())
    var tlsCert: String?

    @Option(help: ArgumentHelp("The PEM private key of --tls-cert.", valueName: "file"), completion: .file())
    var tlsKey: String?

    @Option(
        help: ArgumentHelp(
            "Ask every request for an HTTP Basic login from this file (htpasswd -B or openssl passwd -5/-6 entries).",
            valueName: "file"), completion: .file())
    var htpasswd: String?

    @Flag(help: "With --htpasswd: downloads need no login, uploads still do.")
    var publicRead: Bool = false

    @Flag(help: "Beyond loopback, accept uploads from anyone without --htpasswd.")
    var allowAnonymousUploads: Bool = false

    @Option(
        help: ArgumentHelp(
            "Serve and keep uploads in s3://BUCKET/PREFIX/ instead of <dir>: any number of instances may share it "
                + "(credentials, region and endpoint as for the S3 commands).",
            valueName: "url"))
    var store: String?

    @Option(help: ArgumentHelp("With --store: the S3 endpoint (MinIO, Ceph, R2…).", valueName: "url"))
    var endpointURL: String?

    @Flag(
        help: ArgumentHelp(
            "With --store: this is the only instance serving the prefix (uploads are locked in memory; the endpoint "
                + "need not support conditional writes).")
    )
    var singleInstance: Bool = false

    @Option(
        help: ArgumentHelp(
            "With --store: seconds an upload's lock on S3 lasts unless renewed (a dead instance's uploads wait this "
                + "long).",
            valueName: "seconds"))
    var lockSeconds: Double = 30

    @Option(
        help: ArgumentHelp(
            "With --store: the size of the parts uploads are stored in (at least 5M).", valueName: "size"))
    var partSize: ByteSize?

    @Option(
        help: ArgumentHelp(
            "Seconds a stop (SIGTERM, SIGINT) lets requests in progress go on before it closes their connections.",
            valueName: "seconds"))
    var drainSeconds: Double = 10

    @Option(
        help: ArgumentHelp(
            "Connections open at once; one more is answered 503 and closed (default: half the descriptor limit, the "
                + "rest is room for files).",
            valueName: "n"))
    var maxConnections: Int?

    @Option(
        help: ArgumentHelp(
            "Seconds a client may take no byte of an answer before its connection is dropped.", valueName: "seconds"))
    var sendTimeout: Double = 60

    @Option(help: ArgumentHelp("Event-loop threads that answer connections (default: one a CPU core).", valueName: "n"))
    var threads: Int?

    @Flag(help: "Do not answer GET /.resumectl/metrics (Prometheus text format).")
    var noMetrics: Bool = false

    @Flag(help: "With --htpasswd: the metrics need no login.")
    var metricsPublic: Bool = false

    @Option(
        help: ArgumentHelp(
            "Run this command (no shell; split like a command line) after each upload's file is in place, with "
                + "RESUMECTL_PATH, RESUMECTL_SIZE, RESUMECTL_PROTOCOL, RESUMECTL_UPLOAD_ID, RESUMECTL_USER and "
                + "RESUMECTL_SHA256 in its environment; at least once per upload, also across restarts.",
            valueName: "command"))
    var onUploadComplete: String?

    @Option(help: ArgumentHelp("Completion hooks that may run at once.", valueName: "n"))
    var hookParallel: Int = 4

    @Option(help: ArgumentHelp("Seconds a completion hook may run before it is killed.", valueName: "seconds"))
    var hookTimeout: Double = 300

    /// `--on-upload-complete`, split into the program and its arguments.
    private var hook: CompletionHookSettings? {
        guard let onUploadComplete, let words = CommandWords.split(onUploadComplete), !words.isEmpty else { return nil }
        var hook = CompletionHookSettings(command: words)
        hook.parallel = hookParallel
        hook.timeout = .milliseconds(Int64(hookTimeout * 1000))
        return hook
    }

    func validate() throws {
        guard (0...65535).contains(port) else {
            throw ValidationError("--port must be between 0 and 65535.")
        }
        guard uploadTimeout > 0, uploadTimeout <= 365 * 86400 else {
            throw ValidationError("--upload-timeout must be a positive number of seconds, at most a year.")
        }
        guard headerTimeout > 0, headerTimeout <= 3600 else {
            throw ValidationError("--header-timeout must be a positive number of seconds, at most an hour.")
        }
        if let maxUploads, maxUploads < 1 {
            throw ValidationError("--max-uploads must be at least 1.")
        }
        guard (tlsCert == nil) == (tlsKey == nil) else {
            throw ValidationError("--tls-cert and --tls-key go together.")
        }
        if let store, !store.hasPrefix("s3://") {
            throw ValidationError("--store takes an s3://BUCKET/PREFIX/ URL.")
        }
        if store == nil && (endpointURL != nil || singleInstance || partSize != nil) {
            throw ValidationError("--endpoint-url, --single-instance and --part-size go with --store.")
        }
        guard lockSeconds >= 1, lockSeconds <= 3600 else {
            throw ValidationError("--lock-seconds must be between 1 and 3600.")
        }
        if let partSize, partSize.bytes < 5 << 20 || partSize.bytes > 5 << 30 {
            throw ValidationError("--part-size must be between 5M and 5G (S3's limits).")
        }
        if publicRead && htpasswd == nil {
            throw ValidationError("--public-read goes with --htpasswd.")
        }
        try validateOperations()
        if let refusal = StartPolicy.refusal(
            host: host, logins: htpasswd != nil, readOnly: readOnly, allowAnonymousUploads: allowAnonymousUploads)
        {
            throw ValidationError(refusal + ".")
        }
    }

    /// The options of #47: the stop, the limits, the metrics, the hook.
    private func validateOperations() throws {
        guard drainSeconds >= 0, drainSeconds <= 3600 else {
            throw ValidationError("--drain-seconds must be between 0 and 3600.")
        }
        guard bodyTimeout > 0, bodyTimeout <= 3600 else {
            throw ValidationError("--body-timeout must be a positive number of seconds, at most an hour.")
        }
        guard sendTimeout > 0, sendTimeout <= 3600 else {
            throw ValidationError("--send-timeout must be a positive number of seconds, at most an hour.")
        }
        if let maxConnections, maxConnections < 1 {
            throw ValidationError("--max-connections must be at least 1.")
        }
        if let threads, !(1...256).contains(threads) {
            throw ValidationError("--threads must be between 1 and 256.")
        }
        if metricsPublic && (htpasswd == nil || noMetrics) {
            throw ValidationError("--metrics-public goes with --htpasswd (and not with --no-metrics).")
        }
        guard (1...256).contains(hookParallel), hookTimeout > 0, hookTimeout <= 86400 else {
            throw ValidationError("--hook-parallel must be between 1 and 256, --hook-timeout between 0 and a day.")
        }
        guard let onUploadComplete else { return }
        guard !readOnly else {
            throw ValidationError("--on-upload-complete works with a store that takes uploads (not --read-only).")
        }
        guard let hook else { throw ValidationError("--on-upload-complete: an unclosed quote, or no command.") }
        guard hook.programPath != nil else {
            throw ValidationError("--on-upload-complete: no program \(hook.command[0]) to run (\(onUploadComplete)).")
        }
    }

    func run() async throws {
        var configuration = ServerConfiguration(
            directory: directory,
            host: host,
            port: port,
            readOnly: readOnly,
            uploadTimeout: .milliseconds(Int64(uploadTimeout * 1000)),
            log: { line in Standard.error(line) }
        )
        configuration.overwrite = overwrite
        configuration.maxUploadSize = maxUploadSize?.bytes
        configuration.maxUploads = maxUploads
        configuration.headerTimeout = .milliseconds(Int64(headerTimeout * 1000))
        configuration.bodyTimeout = .milliseconds(Int64(bodyTimeout * 1000))
        if let tlsCert, let tlsKey {
            configuration.tls = TLSFiles(certificateChain: tlsCert, privateKey: tlsKey)
        }
        configuration.htpasswd = htpasswd
        configuration.publicRead = publicRead
        configuration.maxConnections = maxConnections
        configuration.threads = threads
        configuration.sendTimeout = .milliseconds(Int64(sendTimeout * 1000))
        configuration.metrics = !noMetrics
        configuration.metricsPublic = metricsPublic
        configuration.completionHook = hook
        if let store {
            var s3 = S3StoreConfiguration(
                url: store, endpoint: endpointURL, environment: ProcessInfo.processInfo.environment)
            s3.singleInstance = singleInstance
            s3.lockLifetime = .milliseconds(Int64(lockSeconds * 1000))
            if let partSize { s3.partSize = partSize.bytes }
            configuration.s3 = s3
        }
        if let warning = StartPolicy.warning(host: host, logins: htpasswd != nil, tls: tlsCert != nil) {
            Standard.error("resumectl: \(warning)")
        }
        let termination = TerminationSignal()
        let server: ResumeServer
        do {
            server = try await ResumeServer.start(configuration)
        } catch let error as ServeError {
            Standard.error("resumectl: \(error)")
            throw ExitCode(error.exitStatus)
        }
        // Scripts read the port from this line, often through a pipe: flush it now.
        print("listening on \(server.url)")
        fflush(nil)

        await termination.wait()
        Standard.error("resumectl: stopping: no new connections, \(drainSeconds) s for the requests in progress")
        await server.stop(drain: .milliseconds(Int64(drainSeconds * 1000)))
        Standard.error("resumectl: stopped")
    }
}

extension String {
    fileprivate func replacingPrefix(_ prefix: String) -> String {
        hasPrefix(prefix) ? String(dropFirst(prefix.count)) : self
    }
}
