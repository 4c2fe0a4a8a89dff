import ArgumentParser
import Glibc
import ResumeKit

/// Options of the commands that can run a transfer in the background, and `--detach`'s launch.
struct BackgroundOptions: ParsableArguments {
    @Flag(help: "Run in a session of its own (log in STATE/logs/ID.log); print the token id and return.")
    var detach = false

    @Option(
        name: .customLong("start-at"),
        help: "With --detach: hold the transfer until TIME (ISO 8601, or HH:MM local time).")
    var startAt: StartTime?

    @Flag(
        name: .customLong("wait-network"),
        help: ArgumentHelp(
            "When the host does not resolve or refuses, wait for the network (up to 60 s between tries) without "
                + "spending retries. On with --detach.")
    )
    var waitNetwork = false

    /// The re-executed background process (see `Detach`).
    @Flag(name: .customLong("detached-child"), help: .hidden)
    var detachedChild = false

    func validate() throws {
        if startAt != nil && !detach && !detachedChild { throw ValidationError("--start-at needs --detach") }
    }

    /// With `--detach`: this command (without `--detach`, with what a background transfer defaults to) runs again
    /// in the background; its `id` is printed once it runs, then we exit.
    func detachIfAsked(client: TransferClient, json: Bool = false, id: () throws(TransferError) -> String) throws {
        guard detach else { return }
        let named: String
        do { named = try id() } catch { throw Runner.fail(error, json: json) }
        let arguments = Detach.backgroundDefaults(Array(CommandLine.arguments.dropFirst()).filter { $0 != "--detach" })
        try Self.launch(id: named, announce: named, stateDir: client.store.directory, arguments: arguments)
    }

    /// ResumeKit's ``Detach`` starts the background process; this prints `announce` once it is ready, or what
    /// ended it, and exits.
    static func launch(id: String, announce: String, stateDir: String, arguments: [String]) throws -> Never {
        let launch: Detach.Launch
        do { launch = try Detach.start(id: id, stateDir: stateDir, arguments: arguments) } catch {
            throw Runner.fail(error, json: false)
        }
        switch launch {
        case .ready:
            Output.stdout(announce + "\n")
            Glibc.exit(0)
        case .ended(let status, let lastLine, let log):
            Output.stderr((lastLine ?? "resumectl: the background process ended (status \(status)); see \(log)") + "\n")
            Glibc.exit(status)
        }
    }

    /// `client` waiting for the network when asked to, and always in the background.
    func configured(_ client: TransferClient) -> TransferClient {
        var client = client
        client.options.waitForNetwork = waitNetwork || detachedChild
        return client
    }
}
