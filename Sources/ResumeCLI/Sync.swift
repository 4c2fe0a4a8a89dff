import ArgumentParser
import ResumeKit

struct Sync: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Make DST hold what SRC holds: copy what differs, with --delete remove what SRC lacks.",
        discussion: """
            One side is a local folder, the other s3://BUCKET/PREFIX/ or a URL ending in / (a serve folder \
            both ways; any folder listing, nginx's or Apache's autoindex, as a source). A file differs when \
            the sizes differ or the source's is newer (--size-only: sizes alone; --checksum: a content hash \
            where both sides offer one). The run is one batch (b-…): pause, resume, wait and cancel take it, and \
            the same command after a kill continues each file from its committed bytes; the plan is made \
            again from fresh listings. Deletes come only after every copy arrived, and never from an empty or \
            incomplete source listing (exit 65). A serve target replaces files only with serve --overwrite.

            EXAMPLES:
              resumectl sync --dry-run site/ https://files.example.com/site/ --delete
              resumectl sync site/ https://files.example.com/site/ --delete --max-delete 50
              resumectl sync https://mirror.example.com/releases/ releases/
              resumectl sync backup/ s3://my-bucket/backup/ --delete --checksum
            """)

    @Argument(help: "The source: a folder, s3://BUCKET/PREFIX/, or a URL ending in /.")
    var source: String

    @Argument(
        help: "The destination: a folder, or s3://BUCKET/PREFIX/ or a serve URL ending in / when SRC is a folder.")
    var destination: String

    @Flag(help: "Delete what DST holds and SRC does not, once every copy arrived.")
    var delete = false

    @Option(name: .customLong("max-delete"), help: "Refuse the run, before any change, when more would be deleted.")
    var maxDelete: Int?

    @Flag(
        name: .customLong("dry-run"),
        help: "Print the plan (copy, replace, delete, keep, with reasons); change nothing.")
    var dryRun = false

    @Flag(name: .customLong("size-only"), help: "Compare sizes alone.")
    var sizeOnly = false

    @Flag(help: "Compare content hashes where both sides offer one (S3's ETag, serve's Repr-Digest).")
    var checksum = false

    @Option(help: "Files at once (1-64), sharing as many requests in flight (each S3 part takes one).")
    var parallel = 4

    @OptionGroup(title: "S3 (for s3:// URLs)")
    var s3: S3OptionGroup

    @OptionGroup var options: TransferOptionGroup

    @OptionGroup var background: BackgroundOptions

    static func isRemote(_ side: String) -> Bool {
        side.hasPrefix("s3://") || side.hasPrefix("http://") || side.hasPrefix("https://")
    }

    var up: Bool { !Self.isRemote(source) }
    var remote: String { up ? destination : source }

    func validate() throws {
        guard Self.isRemote(source) != Self.isRemote(destination) else {
            throw ValidationError("one side is a local folder, the other s3://BUCKET/PREFIX/ or a URL ending in /")
        }
        guard remote.hasSuffix("/") else { throw ValidationError("\(remote) must end in / to name a folder") }
        guard (1...64).contains(parallel) else { throw ValidationError("--parallel takes 1 to 64") }
        if sizeOnly && checksum { throw ValidationError("--size-only and --checksum exclude each other") }
        if let maxDelete, maxDelete < 0 || !delete {
            throw ValidationError("--max-delete takes 0 or more, with --delete")
        }
        if dryRun && (background.detach || background.startAt != nil) {
            throw ValidationError("--dry-run prints the plan here and now")
        }
    }

    func run() async throws {
        let (taken, url) = options.client(taking: remote)
        let client = background.configured(taken)
        let sync = SyncOptions(delete: delete, sizeOnly: sizeOnly, checksum: checksum, maxDelete: maxDelete)
        if up {
            let upload = UploadRequest(
                filePath: source, url: url, headers: options.header, s3: s3.options(parallel: parallel))
            let batch = BatchRequest(folder: source, target: url, upload: upload, parallel: parallel, sync: sync)
            if dryRun {
                return try await show(id: batch.id) { c, e throws(TransferError) in
                    try await client.planSync(batch, cancellation: c, events: e)
                }
            }
            try await BatchRun.run(id: batch.id, target: url, client: client, options: options, background: background)
            {
                c, e throws(TransferError) in try await client.uploadBatch(batch, cancellation: c, events: e)
            }
        } else {
            let template = DownloadRequest(url: url, headers: options.header, s3: s3.options())
            let request = FolderRequest(
                url: url, folder: destination, template: template, parallel: parallel, sync: sync)
            if dryRun {
                return try await show(id: request.id) { c, e throws(TransferError) in
                    try await client.planSync(request, cancellation: c, events: e)
                }
            }
            try await BatchRun.run(
                id: request.id, target: url, download: true, client: client, options: options, background: background
            ) { c, e throws(TransferError) in try await client.downloadFolder(request, cancellation: c, events: e) }
        }
    }

    /// `--dry-run`: the plan on stdout, a line (or a `plan` event) an action, then the counts.
    private func show(
        id: String,
        _ plan:
            @escaping @Sendable (Cancellation, @escaping @Sendable (BatchEvent) -> Void) async throws(TransferError)
            -> SyncPlan
    ) async throws {
        let reporter = Reporter(json: options.json, quiet: options.quiet, tokenID: id, download: !up)
        let made = try await Runner.run(reporter: reporter) { c throws(TransferError) in
            try await plan(c) { reporter.handle($0) }
        }
        var counts: [String: (any JSONRepresentable)?] = ["event": "planned", "dry_run": true]
        var lines = ""
        for action in made.actions {
            if options.json { reporter.writeJSON(Reporter.planEvent(action)) }
            let kind = action.kind.rawValue
            lines += kind + String(repeating: " ", count: 8 - kind.count) + "\(action.path)  (\(action.reason))\n"
        }
        let tally = SyncAction.Kind.allCases.map { kind in (kind.rawValue, made.actions.count { $0.kind == kind }) }
        for (kind, count) in tally { counts[kind] = count }
        if made.noHash { reporter.note(made.noHashNote) }  // on stderr, with --json too (as a real run says it)
        if options.json { return reporter.writeJSON(counts) }
        Output.stdout(
            lines + "plan for \(id): " + tally.map { "\($0.1) \($0.0)" }.joined(separator: ", ")
                + "; nothing changed (--dry-run)\n")
    }
}
