import Glibc
import ResumeKit

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
