import ArgumentParser
import ResumeKit

/// Runs a batch (new or resumed) under the CLI's rules: --detach, live status, signals, summary, exit status.
enum BatchRun {
    static func run(
        id: String, target: String, download: Bool = false, client: TransferClient, options: TransferOptionGroup,
        background: BackgroundOptions,
        _ work:
            @escaping @Sendable (Cancellation, @escaping @Sendable (BatchEvent) -> Void) async throws(TransferError) ->
            BatchSummary
    ) async throws {
        try background.detachIfAsked(client: client) { id }
        let reporter = Reporter(json: options.json, quiet: options.quiet, tokenID: id, download: download)
        let summary = try await Foreground.run(
            id: id, kind: download ? .download : .upload, url: target, client: client, background: background,
            reporter: reporter
        ) {
            cancellation, _ throws(TransferError) in
            // `list` counts the batch's files from its ledger; the live status says it runs (and its pid).
            let summary = try await work(cancellation) { reporter.handle($0) }
            reporter.summary(summary)
            return summary
        }
        let status = summary.exitStatus
        if status != 0 { throw ExitCode(status) }
    }
}
