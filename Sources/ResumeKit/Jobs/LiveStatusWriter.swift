import FoundationEssentials
import Glibc
import Synchronization

/// Keeps `STATE/run/<id>.json` up to date from a transfer's events.
public final class LiveStatusWriter: @unchecked Sendable {
    private let file: String
    private let folder: String
    private let state: Mutex<(status: LiveStatus, lastWrite: Double)>
    /// Another live process holds this transfer's lock (this one will be refused): its status is left alone.
    private let inert: Bool

    public init(stateDir: String, id: String, phase: LiveStatus.Phase = .running) {
        folder = StateDirectory(stateDir).run
        file = StateDirectory(stateDir).status(id)
        // A running transfer's first status waits a second like every later one: a small download never writes
        // it, and `list` sees it by its lock meanwhile. Any other phase is written at once.
        let status = LiveStatus(pid: getpid(), started: processStart(getpid()), state: phase, updatedAt: Date())
        state = Mutex((status, Monotonic.now))
        let holder = TokenLock.holder(path: TokenStore(directory: stateDir).lockPath(forID: id))
        inert = holder != nil && holder != getpid()
        if phase != .running { publish() }
    }

    /// Writes the status now: a background process is known to `wait` and `list` before it says ready.
    public func publish() {
        guard !inert else { return }
        state.withLock { write(&$0) }
    }

    public func set(phase: LiveStatus.Phase, startAt: Date? = nil) {
        guard !inert else { return }
        state.withLock {
            guard $0.status.state != phase || $0.status.startAt != startAt else { return }
            $0.status.state = phase
            $0.status.startAt = startAt
            write(&$0)
        }
    }

    public func handle(_ event: TransferEvent) {
        guard !inert else { return }
        state.withLock {
            let phase: LiveStatus.Phase
            switch event {
            case .progress(let bytes, let total, let rate):
                ($0.status.bytes, $0.status.total, $0.status.rate, phase) = (bytes, total, rate, .running)
            case .started(_, _, _, let offset, let total):
                ($0.status.bytes, $0.status.total, phase) = (offset, total, .running)
            case .waitingForNetwork: ($0.status.rate, phase) = (0, .waitingForNetwork)
            default: return
            }
            let phaseChanged = $0.status.state != phase
            $0.status.state = phase
            guard phaseChanged || Monotonic.now - $0.lastWrite >= 1 else { return }
            write(&$0)
        }
    }

    /// The transfer ended: nothing is live any more.
    public func finish() { if !inert { unlink(file) } }

    private func write(_ current: inout (status: LiveStatus, lastWrite: Double)) {
        current.lastWrite = Monotonic.now
        current.status.updatedAt = Date()
        guard let data = try? LiveStatus.encoder.encode(current.status) else { return }
        try? TokenStore.makeFolder(folder)
        try? TokenStore.writeDurably(data, to: file, folder: folder, sync: false)
    }
}
