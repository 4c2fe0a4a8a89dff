import ArgumentParser
import Glibc
import ResumeKit

struct Download: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "download",
        abstract: "Download a URL; an interrupted download resumes with Range and If-Range.",
        discussion: """
            The body goes to PATH.part and is renamed to PATH only when complete and verified. \
            Running the same command again continues where it stopped.

            A URL ending in / that answers a folder listing (serve's, nginx's autoindex in html or json, \
            Apache's, any page of links) downloads every file below it into the folder -o names (default: \
            the folder's name), as one batch (b-…) that pause, resume, cancel and wait take: only links \
            that stay below the URL are followed. s3://BUCKET/KEY is a signed ranged GET with every \
            guarantee above; s3://BUCKET/PREFIX/ downloads every object under the prefix as such a batch \
            (into -o, default the current folder), keys becoming paths below it.

            EXAMPLES:
              resumectl download https://example.com/big.iso -o /data/
              resumectl download --connections 4 https://example.com/big.iso
              resumectl download --checksum sha256=HEX https://example.com/big.iso
              resumectl download -i urls.txt -o downloads/ --parallel 8
              resumectl download --cacert ca.pem --netrc https://intranet.example/a.tar
              https_proxy=http://proxy:3128 resumectl download https://example.com/a.iso
              resumectl download s3://my-bucket/images/disk.img --connections 4
              resumectl download https://example.com/releases/ -o releases/ --include '*.tar.gz'
              resumectl download s3://my-bucket/photos/2024/ -o photos/ --parallel 8
            """)

    @Argument(help: "http or https URL (a folder when it ends in /), s3://BUCKET/KEY, or s3://BUCKET/PREFIX/.")
    var url: String?

    @Option(
        name: [.short, .customLong("input-file")],
        help: ArgumentHelp(
            "Download every URL listed in this file (one a line, optionally followed by an output name); -o names the "
                + "folder.")
    )
    var inputFile: String?

    @Option(help: "With -i or a folder: how many files at once.")
    var parallel = 4

    @Flag(
        name: [.short, .long],
        help: "Download the URL as a folder, following its subfolders (on for a URL ending in /).")
    var recursive = false

    @Option(help: "With a folder: how many levels of subfolders to follow (0: its own files only).")
    var depth: Int?

    @Option(help: "With a folder: only files whose path below it matches this glob (repeatable).")
    var include: [String] = []

    @Option(help: "With a folder: leave out files whose path below it matches this glob (repeatable).")
    var exclude: [String] = []

    @Flag(help: "With a folder: keep a file there with the listed size and time, fetch one that differs.")
    var skipExisting = false

    @Option(
        name: [.short, .customLong("output")],
        help: "Where to write the file (default: the URL's last path segment here); - for stdout.")
    var output: String?

    @Option(help: "Verify the result: sha256=HEX.")
    var checksum: String?

    @Option(
        name: .customLong("checksum-file"),
        help: ArgumentHelp(
            "Verify each file (the URL's, a list's, a folder's) by its entry in a list of SHA-256 sums "
                + "(sha256sum's or BSD lines), a file or an http(s) URL."))
    var checksumFile: String?

    @Option(name: .customLong("on-change"), help: "When the file changed on the server: restart or fail.")
    var onChange: DownloadStateMachine.OnChange = .restart

    @Flag(help: "Replace an existing file at the output path.")
    var force = false

    @Option(
        help: ArgumentHelp(
            "Parallel ranged connections for this file (1-16; with mirrors, 2 a mirror up to 16); falls back to one "
                + "when the server cannot."))
    var connections: Int?

    @Option(
        help: ArgumentHelp(
            "Another URL of the same file (repeatable): segments are spread over every URL, a failing or slow one "
                + "dropped; needs --checksum or --checksum-file."))
    var mirror: [String] = []

    @Option(name: .customLong("per-mirror"), help: "With --mirror: at most this many connections to one URL (1-16).")
    var perMirror = 2

    @OptionGroup(title: "S3 (for s3:// URLs)")
    var s3: S3OptionGroup

    @OptionGroup var options: TransferOptionGroup

    @OptionGroup var background: BackgroundOptions

    func validate() throws {
        if let checksum { _ = try Checksum.parse(checksum) }
        guard (1...16).contains(connections ?? 1) else { throw ValidationError("--connections takes 1 to 16") }
        guard (1...16).contains(perMirror) else { throw ValidationError("--per-mirror takes 1 to 16") }
        if !mirror.isEmpty, url == nil || isFolder || output == "-" {
            throw ValidationError(
                "--mirror gives more URLs of one file saved to a file: not -i LIST, a folder or stdout")
        }
        guard (1...64).contains(parallel) else { throw ValidationError("--parallel takes 1 to 64") }
        if let depth, depth < 0 { throw ValidationError("--depth takes 0 or more") }
        if !isFolder, depth != nil || !include.isEmpty || !exclude.isEmpty || skipExisting {
            throw ValidationError(
                "--depth, --include, --exclude and --skip-existing apply to a folder (a URL ending in /, or -r)")
        }
        if isFolder, checksum != nil { throw ValidationError("--checksum applies to one file, not to a folder") }
        if checksum != nil, checksumFile != nil {
            throw ValidationError("give --checksum or --checksum-file, not both")
        }
        if let url, Self.namesMetalink(url), checksumFile != nil || output == "-" {
            throw ValidationError(
                "a Metalink carries its own hashes and is saved to a file: no --checksum-file or -o -")
        }
        if output == "-", checksumFile != nil {
            throw ValidationError("--checksum-file checks files saved to disk, not stdout")
        }
        switch (url, inputFile) {
        case (nil, nil): throw ValidationError("give a URL, or -i LIST")
        case (_?, _?): throw ValidationError("give a URL or -i LIST, not both")
        case (nil, _?) where checksum != nil: throw ValidationError("--checksum applies to one URL, not to -i LIST")
        case (nil, _?) where background.detach: throw ValidationError("--detach applies to one URL, not to -i LIST")
        default: break
        }
        if output == "-" {
            // stdout carries the body and nothing else.
            if options.json {
                throw ValidationError("--json cannot share stdout with the body: drop it, or write to a file")
            }
            if inputFile != nil || isFolder { throw ValidationError("-o - takes one file, not -i LIST or a folder") }
            if (connections ?? 1) > 1 {
                throw ValidationError("--connections needs a file to write ranges into, not stdout")
            }
            if background.detach || background.startAt != nil {
                throw ValidationError("a download to stdout runs in the foreground")
            }
        }
    }

    /// One URL runs on the main thread (see ``TransferClient/downloadBlocking(_:cancellation:events:)``); a
    /// list, an S3 prefix and `--start-at`'s hold wait on tasks.
    @MainActor
    func run() async throws {
        guard let given = url else { return try await runList(inputFile!) }
        let (taken, url) = options.client(taking: given)
        var configured = taken
        configured.options.connections = defaultConnections(mirrors: mirror.count)
        configured.options.perMirror = perMirror
        let client = background.configured(configured)
        if isFolder { return try await runFolder(url.hasSuffix("/") ? url : url + "/", client: client) }
        if Self.namesMetalink(url) {
            let request: DownloadRequest
            do { request = try metalinkRequest(url, client: client) } catch {
                throw Runner.fail(error, json: options.json)
            }
            configured.options.connections = defaultConnections(mirrors: request.mirrors.count)
            return try await runOne(request, client: background.configured(configured))
        }
        var expected = try checksum.map(Checksum.parse)
        if let sums = try loadChecksums(client) {
            expected =
                sums.sha256(for: OutputPath.defaultName(url: url))
                ?? output.flatMap { sums.sha256(for: String($0.split(separator: "/").last ?? "")) }
            if expected == nil { noteUnlisted(OutputPath.defaultName(url: url)) }
        }
        var asked = DownloadRequest(
            url: url, outputPath: output, headers: options.header, expectedSHA256: expected,
            onChange: onChange, force: force, s3: s3.options())
        asked.mirrors = mirror
        try await runOne(asked, client: client)
    }

    /// Runs one download: to stdout, detached, at a time, or here.
    @MainActor
    private func runOne(_ request: DownloadRequest, client: TransferClient) async throws {
        let url = request.url
        if output == "-" {
            // Progress and the failure line on stderr, the body alone on stdout.
            let reporter = Reporter(json: false, quiet: options.quiet)
            _ = try Runner.runBlocking(reporter: reporter) { cancellation throws(TransferError) in
                try client.downloadBlocking(request, cancellation: cancellation) { reporter.handle($0) }
            }
            return
        }
        try background.detachIfAsked(client: client, json: options.json) { () throws(TransferError) in
            try client.prepare(request)
        }
        let id = client.downloadTokenID(request)
        let reporter = Reporter(json: options.json, quiet: options.quiet, tokenID: id ?? "")
        let result: DownloadResult
        if background.startAt != nil {
            result = try await Foreground.run(
                id: id, kind: .download, url: url, client: client, background: background, reporter: reporter
            ) {
                cancellation, events throws(TransferError) in
                try await client.download(request, cancellation: cancellation, events: events)
            }
        } else {
            result = try Foreground.runBlocking(id: id, client: client, background: background, reporter: reporter) {
                cancellation, events throws(TransferError) in
                try client.downloadBlocking(request, cancellation: cancellation, events: events)
            }
        }
        reporter.result(result.path)
    }
}

extension Download {
    /// `--connections`, else one, or with mirrors `--per-mirror` to each URL (at most 16).
    func defaultConnections(mirrors: Int) -> Int {
        connections ?? (mirrors == 0 ? 1 : min(16, (mirrors + 1) * perMirror))
    }

    /// `--checksum-file`, read once before anything is fetched; a failure to read it ends the command.
    func loadChecksums(_ client: TransferClient) throws -> ChecksumFile? {
        guard let location = checksumFile else { return nil }
        do {
            let sums = try client.checksumFile(location, headers: options.header, cancellation: Cancellation())
            if let line = sums.skippedNote(location), !options.quiet { Output.stderr("resumectl: \(line)\n") }
            return sums
        } catch {
            throw Runner.fail(error, json: options.json)
        }
    }

    /// A file the sums do not list is fetched all the same, and said so once.
    func noteUnlisted(_ name: String) {
        guard !options.quiet, let location = checksumFile else { return }
        Output.stderr("resumectl: \(ChecksumFile.unlisted(name, in: location))\n")
    }

    /// A folder URL (ending in `/`, or with `-r`) or an S3 prefix.
    var isFolder: Bool {
        guard let url, inputFile == nil else { return false }
        if case .s3Prefix? = try? Route(url) { return true }
        return !Route.isS3(url) && (recursive || url.hasSuffix("/"))
    }

    /// `URL/ -o DIR`: every file under the folder (or the S3 prefix) as one batch, announced before any byte.
    func runFolder(_ url: String, client: TransferClient) async throws {
        let folder = output ?? FolderRequest.defaultFolder(url: url)
        let template = DownloadRequest(
            url: url, headers: options.header, onChange: onChange, force: force, s3: s3.options())
        let request = FolderRequest(
            url: url, folder: folder, template: template, parallel: parallel, depth: depth, include: include,
            exclude: exclude, skipExisting: skipExisting, checksumFile: checksumFile)
        try await BatchRun.run(
            id: request.id, target: url, download: true, client: client, options: options, background: background
        ) {
            cancellation, events throws(TransferError) in
            try await client.downloadFolder(request, cancellation: cancellation, events: events)
        }
    }
}

extension DownloadStateMachine.OnChange: ExpressibleByArgument {}
