import ArgumentParser
import FoundationEssentials
import Glibc
import ResumeKit

/// Options of the commands that can run a transfer in the background.
struct BackgroundOptions: ParsableArguments {
    @Flag(help: "Run in a session of its own (log in STATE/logs/ID.log); print the token id and return.")
    var detach = false

    @Option(name: .customLong("start-at"), help: "With --detach: hold the transfer until TIME (ISO 8601, or HH:MM local time).")
    var startAt: StartTime?

    @Flag(name: .customLong("wait-network"), help: "When the host does not resolve or refuses, wait for the network (up to 60 s between tries) without spending retries. On with --detach.")
    var waitNetwork = false

    /// The re-executed background process (see `Detach`).
    @Flag(name: .customLong("detached-child"), help: .hidden)
    var detachedChild = false

    func validate() throws {
        if startAt != nil && !detach && !detachedChild { throw ValidationError("--start-at needs --detach") }
    }

    var waitsForNetwork: Bool { waitNetwork || detachedChild }
}

/// `--detach` from the command line: ResumeKit's ``Detach`` starts the background process; this prints
/// the token id once it is ready, or what ended it, and exits.
enum Background {
    static func launch(id: String, announce: String, stateDir: String, arguments: [String]) throws -> Never {
        let launch: Detach.Launch
        do { launch = try Detach.start(id: id, stateDir: stateDir, arguments: arguments) } catch {
            throw Runner.fail(error, json: false)
        }
        switch launch {
        case .ready:
            Output.stdout(announce + "\n")
            exit(0)
        case .ended(let status, let lastLine, let log):
            Output.stderr((lastLine ?? "resumectl: the background process ended (status \(status)); see \(log)") + "\n")
            exit(status)
        }
    }

    /// This command's own arguments without `--detach`, with what a background transfer defaults to.
    static func childArguments() -> [String] {
        Detach.backgroundDefaults(Array(CommandLine.arguments.dropFirst()).filter { $0 != "--detach" })
    }
}
