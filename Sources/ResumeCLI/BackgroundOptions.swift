import ArgumentParser
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

    /// With `--detach`: this command runs again in the background; its `id` is printed once it runs, then we exit.
    func detachIfAsked(client: TransferClient, json: Bool = false, id: () throws(TransferError) -> String) throws {
        guard detach else { return }
        let named: String
        do { named = try id() } catch { throw Runner.fail(error, json: json) }
        try Background.launch(id: named, announce: named, stateDir: client.store.directory, arguments: Background.childArguments())
    }

    /// `client` waiting for the network when asked to, and always in the background.
    func configured(_ client: TransferClient) -> TransferClient {
        var client = client
        client.options.waitForNetwork = waitNetwork || detachedChild
        return client
    }
}
