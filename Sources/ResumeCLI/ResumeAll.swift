import ArgumentParser
import Glibc
import ResumeKit

/// `resume --all`: ResumeKit's ``Supervisor`` runs the pool; with `--detach` the pool itself runs in the
/// background and each transfer writes its events to its own log.
enum ResumeAll {
    static func run(client: TransferClient, parallel: Int, background: BackgroundOptions) throws {
        let store = client.store
        let ids = Supervisor.resumable(store: store)
        // The transfer options of this command line, for each `resume ID` (not `--all`, `--parallel`, `--detach`).
        var forwarded: [String] = []
        var skipNext = false
        for arg in CommandLine.arguments.dropFirst(2) {
            if skipNext { skipNext = false; continue }
            switch arg {
            case "--all", "--detach", "--detached-child": continue
            case "--parallel": skipNext = true
            default: if !arg.hasPrefix("--parallel=") { forwarded.append(arg) }
            }
        }
        if background.detach {
            guard !ids.isEmpty else { return }
            try BackgroundOptions.launch(
                id: "resume-all", announce: ids.joined(separator: "\n"), stateDir: store.directory,
                arguments: ["resume", "--all", "--parallel", String(parallel)] + Detach.backgroundDefaults(forwarded))
        }
        let statuses = Supervisor.run(
            ids: ids, parallel: parallel, store: store, logs: background.detachedChild,
            arguments: { ["resume", $0] + forwarded + (background.detachedChild ? ["--detached-child"] : []) },
            spawnFailed: { id, error in Output.stderr("resumectl: \(id): \(error)\n") },
            queuedAll: { if background.detachedChild { Detach.signalReady() } })
        let status = ExitStatus.combined(statuses)
        if status != 0 { throw ExitCode(status) }
    }
}
