import ResumeKit

/// Runs one transfer of the CLI: its live status in `STATE/run/<id>.json` for as long as it runs, the
/// hold of `--start-at`, the "ready" of a background process, and the signal rules of `Runner`.
enum Foreground {
    static func run<T: Sendable>(
        id: String?, kind: ResumeToken.Kind, url: String, client: TransferClient, background: BackgroundOptions, reporter: Reporter,
        _ work: @escaping @Sendable (Cancellation, @escaping EventHandler) async throws(TransferError) -> T
    ) async throws -> T {
        let live = id.map { LiveStatusWriter(stateDir: client.store.directory, id: $0) }
        defer { live?.finish() }
        let events: EventHandler = { event in
            live?.handle(event)
            reporter.handle(event)
        }
        let startAt = background.startAt?.date
        let child = background.detachedChild
        return try await Runner.run(reporter: reporter) { cancellation throws(TransferError) in
            if let startAt, let id, let live {
                try await Detach.hold(until: startAt, id: id, kind: kind, url: url, client: client, live: live, cancellation: cancellation)
            } else if child {
                live?.publish()
                Detach.signalReady()
            }
            return try await work(cancellation, events)
        }
    }
}
