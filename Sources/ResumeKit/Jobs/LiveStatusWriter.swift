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

    public init(stateDir: String, id: String, phase: LiveStatus.Phase = .running, startAt: Date? = nil) {
        folder = StateDirectory(stateDir).run
        file = StateDirectory(stateDir).status(id)
        // A running transfer's first status waits a second like every later one: a small download never writes
        // it, and `list` sees it by its lock meanwhile. Any other phase is written at once.
        state = Mutex((LiveStatus(pid: getpid(), state: phase, startAt: startAt, updatedAt: Date()), Monotonic.now))
        let holder = TokenLock.holder(path: TokenStore(directory: stateDir).lockPath(forID: id))
        inert = holder != nil && holder != getpid()
        guard !inert, phase != .running else { return }
        state.withLock { write($0.status) }
    }

    /// Writes the status now: a background process is known to `wait` and `list` before it says ready.
    public func publish() {
        guard !inert else { return }
        state.withLock {
            $0.lastWrite = Monotonic.now
            write($0.status)
        }
    }

    public func set(phase: LiveStatus.Phase, startAt: Date? = nil) {
        guard !inert else { return }
        state.withLock {
            guard $0.status.state != phase || $0.status.startAt != startAt else { return }
            $0.status.state = phase
            $0.status.startAt = startAt
            $0.lastWrite = Monotonic.now
            write($0.status)
        }
    }

    public func handle(_ event: TransferEvent) {
        guard !inert else { return }
        state.withLock {
            let phase: LiveStatus.Phase
            switch event {
            case .progress(let bytes, let total, let rate): ($0.status.bytes, $0.status.total, $0.status.rate, phase) = (bytes, total, rate, .running)
            case .started(_, _, _, let offset, let total): ($0.status.bytes, $0.status.total, phase) = (offset, total, .running)
            case .waitingForNetwork: ($0.status.rate, phase) = (0, .waitingForNetwork)
            default: return
            }
            let phaseChanged = $0.status.state != phase
            $0.status.state = phase
            let t = Monotonic.now
            guard phaseChanged || t - $0.lastWrite >= 1 else { return }
            $0.lastWrite = t
            write($0.status)
        }
    }

    /// The transfer ended: nothing is live any more.
    public func finish() { if !inert { unlink(file) } }

    private func write(_ status: LiveStatus) {
        var status = status
        status.updatedAt = Date()
        guard let data = try? LiveStatus.encoder.encode(status) else { return }
        try? TokenStore.makeFolder(folder)
        try? TokenStore.writeDurably(data, to: file, folder: folder, sync: false)
    }
}
