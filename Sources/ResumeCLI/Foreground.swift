import ResumeKit

/// Runs one transfer of the CLI: its live status in `STATE/run/<id>.json` for as long as it runs, the
/// hold of `--start-at`, the "ready" of a background process, and the signal rules of `Runner`.
enum Foreground {
    static func run<T: Sendable>(
        id: String?, kind: ResumeToken.Kind, url: String, client: TransferClient, background: BackgroundOptions,
        reporter: Reporter,
        _ work: @escaping @Sendable (Cancellation, @escaping EventHandler) async throws(TransferError) -> T
    ) async throws -> T {
        let (live, events) = wiring(id: id, client: client, reporter: reporter)
        defer { live?.finish() }
        let startAt = background.startAt?.date
        let child = background.detachedChild
        return try await Runner.run(reporter: reporter) { cancellation throws(TransferError) in
            if let startAt, let id, let live {
                try await Detach.hold(
                    until: startAt, id: id, kind: kind, url: url, client: client, live: live, cancellation: cancellation
                )
            } else if child {
                ready(live)
            }
            return try await work(cancellation, events)
        }
    }

    /// ``run(id:kind:url:client:background:reporter:_:)`` for work that blocks the calling thread (one
    /// download); not for `--start-at`, whose hold waits.
    static func runBlocking<T>(
        id: String?, client: TransferClient, background: BackgroundOptions, reporter: Reporter,
        _ work: (Cancellation, @escaping EventHandler) throws(TransferError) -> T
    ) throws -> T {
        precondition(background.startAt == nil, "--start-at holds the transfer: Foreground.run")
        let (live, events) = wiring(id: id, client: client, reporter: reporter)
        defer { live?.finish() }
        return try Runner.runBlocking(reporter: reporter) { cancellation throws(TransferError) in
            if background.detachedChild { ready(live) }
            return try work(cancellation, events)
        }
    }

    /// The transfer's events go to its live status and to the reporter.
    private static func wiring(id: String?, client: TransferClient, reporter: Reporter) -> (
        LiveStatusWriter?, EventHandler
    ) {
        let live = id.map { LiveStatusWriter(stateDir: client.store.directory, id: $0) }
        return (
            live,
            { event in
                live?.handle(event)
                reporter.handle(event)
            }
        )
    }

    /// A background process is known to `wait` and `list` before it tells its parent it is ready.
    private static func ready(_ live: LiveStatusWriter?) {
        live?.publish()
        Detach.signalReady()
    }
}
