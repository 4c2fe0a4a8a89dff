import ArgumentParser
import Glibc
import ResumeKit

struct List: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List transfers: one line each, with its state, progress, URL and path.",
        discussion: """
            A state is one of: running (pid), scheduled, queued, waiting for network, paused, failed and \
            resumable, failed. --all adds the transfers that ended in the last 7 days (done, failed, cancelled).
            """)

    @Flag(help: "Also the transfers that ended (kept 7 days).")
    var all = false

    @OptionGroup var state: StateOptions

    func run() throws {
        let store = state.store
        let (tokens, broken) = store.all()
        // A folder upload's files are its batch's row, not rows of their own.
        var states = tokens.filter { $0.upload?.batch == nil }.compactMap {
            TransferState(id: $0.id, store: store, token: $0)
        }
        let batches = state.client.batchRecords()
        for b in batches { Output.stdout(batchRow(b, client: state.client) + "\n") }
        if all {
            let known = Set(tokens.map(\.id) + batches.map(\.id))
            states += ResultStore(directory: store.directory).all().filter { !known.contains($0.id) }
                .compactMap { TransferState(id: $0.id, store: store) }
        }
        for s in states { Output.stdout((state.json ? TransferRow(s).json : TransferRow(s).line) + "\n") }
        for (file, reason) in broken { Output.stderr("resumectl: skipped \(file): \(reason)\n") }
    }

    /// The row of an unfinished folder upload or download (`b-…`).
    private func batchRow(_ batch: BatchRecord, client: TransferClient) -> String {
        let row = TransferState(id: batch.id, store: client.store).map(TransferRow.init)
        let text = row?.stateText ?? "failed and resumable"
        let (url, files) = (Redact.url(batch.target), client.batchFinishedCount(batch.id))
        guard state.json else { return "\(batch.id)  batch  \(text)  \(files) files finished  \(url)  \(batch.folder)" }
        return JSONLine.encode([
            "id": batch.id, "kind": "batch", "state": text, "pid": row?.pid.map(Int.init),
            "finished": files, "url": url, "path": batch.folder,
        ])
    }
}
