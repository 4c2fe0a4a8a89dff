import ArgumentParser
import Glibc
import ResumeKit

struct Show: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Print a token's JSON, or the record of a transfer that ended.")

    @Argument(help: "Token id or token file path.")
    var token: String

    @OptionGroup var state: StateOptions

    func run() throws {
        if let batch = state.client.batchRecord(token) {
            Output.stdout(TokenStore.json(batch) + "\n")
            Output.stderr("resumectl: \(token): \(state.client.batchFinishedCount(token)) files finished so far\n")
            return
        }
        do {
            let loaded = try state.client.loadToken(token)
            Output.stdout(TokenStore.json(loaded) + "\n")
            if let inUse = loaded.download?.mirrorsInUse { Output.stderr("resumectl: \(token): \(inUse)\n") }
            if let concat = loaded.upload?.concat {
                let complete = concat.partials.filter { $0.url != nil && $0.offset == $0.length }.count
                Output.stderr(
                    "resumectl: \(token): \(complete) of \(concat.partials.count) partial uploads complete"
                        + (concat.final == nil ? "\n" : ", joined by the final upload\n"))
            }
        } catch {
            guard error.code == .inputMissing, let record = state.client.record(token) else {
                throw Runner.fail(error, json: false)
            }
            Output.stdout(TokenStore.json(record) + "\n")
        }
    }
}
