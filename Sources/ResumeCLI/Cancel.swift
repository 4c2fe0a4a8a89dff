import ArgumentParser
import Glibc
import ResumeKit

struct Cancel: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cancel",
        abstract: "Forget a transfer: remove its .part file (download) or DELETE the server's upload, then the token.",
        usage: "resumectl cancel [<options>] <token>",
        discussion:
            "An S3 upload's multipart upload is aborted (AbortMultipartUpload), which frees its parts; --keep-parts "
            + "leaves it on S3."
    )

    @Argument(help: "Token id or token file path.")
    var token: String

    @Flag(
        name: .customLong("keep-parts"),
        help: "S3: leave the multipart upload and its parts on S3 (no AbortMultipartUpload).")
    var keepParts = false

    @OptionGroup var state: StateOptions

    func run() async throws {
        let client = state.client
        let isBatch = client.batchRecord(token) != nil
        // A running (or scheduled, or detached) transfer is stopped first, as `pause` would.
        if let id = isBatch ? token : try? client.loadToken(token).id,
            case .stillRunning(let pid) = Jobs.stop(id: id, store: client.store, within: 30)
        {
            throw Runner.fail(TransferError(.busy, "pid \(pid) has not stopped after 30 s"), json: false)
        }
        do {
            let message =
                try await isBatch
                ? client.cancelBatch(token, keepParts: keepParts) : client.cancel(token, keepParts: keepParts)
            Output.stderr("resumectl: \(message)\n")
        } catch  where !isBatch && error.code == .inputMissing && !token.contains("/") {
            // A finished transfer has nothing left to forget; only an id nothing knows is an error.
            guard let record = client.record(token) else { throw Runner.fail(error, json: false) }
            Output.stderr(
                "resumectl: \(token) already ended (\(record.outcome.rawValue) at "
                    + "\(TransferRow.localTime(record.endedAt))); nothing to cancel\n"
            )
        } catch {
            throw Runner.fail(error, json: false)
        }
    }
}
