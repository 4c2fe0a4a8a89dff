import ArgumentParser
import Glibc
import ResumeKit

struct Resume: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resume",
        abstract: "Continue a transfer from its token, even after kill -9 or a reboot.",
        discussion: """
            A transfer that already completed prints its result line again and exits 0.

            --all continues every paused or resumable-failed transfer, --parallel N at a time, each in a \
            process of its own. It exits 0 when all succeeded, else with the worst status: a failure for \
            good (1, 65 …) before one a resume continues (74, 130, 75).

            Connection options the transfer began with (--cacert, -k, -x, --http1.1 …) are kept in the token \
            and used again; an option given now replaces the kept one. Logins (-u, --netrc) and -H \
            credentials are never kept: give them again.

            EXAMPLES:
              resumectl resume d-1a2b3c4d5e6f7a8b
              resumectl resume d-1a2b3c4d5e6f7a8b --url https://example.com/new-link
              resumectl resume u-1a2b3c4d5e6f7a8b -u alice
              resumectl resume --all --detach
            """)

    @Argument(help: "Token id (d-…, u-…, or b-… for a folder) or the path of a token file.")
    var token: String?

    @Option(
        help: "A replacement URL (e.g. a fresh signed link); a download accepts it only if it serves the same file.")
    var url: String?

    @Flag(help: "Every paused or resumable-failed transfer.")
    var all = false

    @Option(help: "With --all: how many transfers at once.")
    var parallel = 4

    @OptionGroup var options: TransferOptionGroup

    @OptionGroup var background: BackgroundOptions

    func validate() throws {
        switch (token, all) {
        case (nil, false): throw ValidationError("give a token id, or --all")
        case (_?, true): throw ValidationError("give a token id or --all, not both")
        default: break
        }
        if all && url != nil { throw ValidationError("--url applies to one token, not to --all") }
        guard (1...64).contains(parallel) else { throw ValidationError("--parallel takes 1 to 64") }
    }

    func run() async throws {
        // A token whose URL names a user asks for the password (never stored) before anything runs.
        let known = token.flatMap { $0.hasPrefix("b-") ? nil : try? TransferClient(store: options.store).loadToken($0) }
        let client = background.configured(try options.client(resuming: known?.url))
        guard let reference = token else {
            return try ResumeAll.run(client: client, parallel: parallel, background: background)
        }
        if reference.hasPrefix("b-") { return try await resumeBatch(reference, client: client) }
        if background.detach {
            guard let known else {
                throw Runner.fail(TransferError(.inputMissing, "no token named '\(reference)'"), json: options.json)
            }
            if let pid = TokenLock.holder(path: client.store.lockPath(forID: known.id)) {
                throw Runner.fail(
                    TransferError(.busy, "\(TokenLock.Failure.held(pid: pid)); not starting a second one"),
                    json: options.json)
            }
            try background.detachIfAsked(client: client) { known.id }
        }
        let reporter = Reporter(
            json: options.json, quiet: options.quiet, tokenID: known?.id ?? (reference.contains("/") ? "" : reference))
        let newURL = url
        let headers = options.header
        let result = try await Foreground.run(
            id: known?.id, kind: known?.kind ?? .download, url: known?.url ?? "", client: client,
            background: background, reporter: reporter
        ) { cancellation, events throws(TransferError) in
            try await client.resume(
                reference, newURL: newURL, headers: headers, cancellation: cancellation, events: events)
        }
        switch result {
        case .downloaded(let d): reporter.result(d.path)
        case .uploaded(let u): reporter.result(u.url)
        }
    }
}

extension Resume {
    /// `resume b-…`: the folder upload or download continues as its record describes it; one that ended done
    /// says so (exit 0).
    func resumeBatch(_ id: String, client: TransferClient) async throws {
        guard let record = client.batchRecord(id) else {
            if let record = client.record(id), record.outcome == .done {
                let place =
                    record.kind == .download
                    ? "\(record.url) is in \(record.path ?? "")" : "\(record.path ?? "") is at \(record.url)"
                if !options.quiet { Output.stderr("resumectl: \(id) already finished: every file of \(place)\n") }
                return
            }
            throw Runner.fail(TransferError(.inputMissing, "no batch named '\(id)'"), json: options.json)
        }
        if url != nil {
            throw Runner.fail(
                TransferError(.usage, "--url applies to one download, not to a batch"), json: options.json)
        }
        let headers = options.header
        try await BatchRun.run(
            id: id, target: record.target, download: record.download != nil, client: client, options: options,
            background: background
        ) {
            cancellation, events throws(TransferError) in
            try await client.resumeBatch(id, headers: headers, cancellation: cancellation, events: events)
        }
    }
}
