import ArgumentParser
import Glibc
import ResumeKit

struct Pause: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pause",
        abstract: "Stop a running transfer from any shell; it commits and exits 75.",
        usage: "resumectl pause [<options>] <token>")

    @Argument(help: "Token id or token file path.")
    var token: String

    @Option(help: "Seconds to wait for the transfer to stop.")
    var wait: Double = 30

    @OptionGroup var state: StateOptions

    func run() throws {
        let store = state.store
        // A transfer younger than its first checkpoint has a lock but no token file yet.
        let id = token.contains("/") ? try state.load(token).id : token
        switch Jobs.stop(id: id, store: store, within: wait) {
        case .notRunning:
            if state.client.batchRecord(id) != nil {
                Output.stderr("resumectl: \(id) is not running; resume with: resumectl resume \(id)\n")
            } else if !store.exists(id: id), let record = state.client.record(id) {
                Output.stderr(
                    "resumectl: \(id) already ended (\(record.outcome.rawValue) at "
                        + "\(TransferRow.localTime(record.endedAt)))\n"
                )
            } else {
                _ = try state.load(token)
                Output.stderr("resumectl: \(id) is not running\n")
            }
            return
        case .cannotSignal(let pid, let code):
            throw Runner.fail(
                TransferError(.failed, "cannot signal pid \(pid): \(String(cString: strerror(code)))"), json: false)
        case .stillRunning(let pid):
            throw Runner.fail(TransferError(.busy, "pid \(pid) has not stopped after \(wait) s"), json: false)
        case .stopped:
            break
        }
        if let batch = state.client.batchRecord(id) {
            Output.stderr(
                "resumectl: paused \(batch.id) with \(state.client.batchFinishedCount(id)) files finished; resume "
                    + "with: resumectl resume \(id)\n"
            )
        } else if let saved = try? store.load(id) {
            let committed = saved.download?.heldBytes ?? saved.upload?.acknowledgedBytes ?? 0
            Output.stdout("\(committed)\n")
            Output.stderr("resumectl: paused \(id) at \(committed) bytes; resume with: resumectl resume \(id)\n")
        } else {
            Output.stderr("resumectl: \(id) finished before it could be paused\n")
        }
    }
}
