import ArgumentParser
import Glibc
import ResumeKit

struct Wait: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wait",
        abstract: "Wait until transfers have ended; exit with their status.",
        usage: "resumectl wait [<options>] <tokens> ...",
        discussion: """
            Each ended transfer prints its result line (done) on stdout or its error line on stderr. The exit \
            status is the transfer's own (0 done, 1 failed, 75 paused or resumable, …); with several ids, the \
            worst: a failure for good (1, 65 …) before one a resume continues (74, 130, 75). An unknown id \
            gives 66. When --timeout passes first, wait exits 75 and says which ids are still running.
            """)

    @Argument(help: "Token ids.")
    var tokens: [String]

    @Option(help: "Give up after this many seconds (exit 75).")
    var timeout: Double?

    @OptionGroup var state: StateOptions

    func validate() throws {
        if tokens.isEmpty { throw ValidationError("give at least one token id") }
        if let timeout, timeout < 0 || !timeout.isFinite { throw ValidationError("--timeout must be 0 or more") }
    }

    func run() async throws {
        var statuses: [String: Int32] = [:]
        let left = await Jobs.wait(tokens, store: state.store, timeout: timeout) { id, ended in
            statuses[id] = ended?.exitStatus ?? 66
            guard let ended else { return Output.stderr("resumectl: no transfer named '\(id)'\n") }
            if ended.exitStatus == 0, let record = ended.record {
                Output.stdout(record.resultLine + "\n")
            } else {
                let why = ended.record?.error ?? "stopped without a result (killed?)"
                let hint = ended.token != nil ? "; resume with: resumectl resume \(id)" : ""
                Output.stderr("resumectl: \(id): \(why)\(hint)\n")
            }
        }
        if !left.isEmpty {
            Output.stderr("resumectl: still running after \(timeout ?? 0) s: \(left.joined(separator: " "))\n")
            throw ExitCode(75)
        }
        let status = ExitStatus.combined(tokens.compactMap { statuses[$0] })
        if status != 0 { throw ExitCode(status) }
    }
}
