import Glibc

/// Where a transfer stands, from its lock (is the holder alive?), its live status, its token and its record.
public struct TransferState {
    public enum Phase: Equatable {
        case running(pid: Int32, phase: LiveStatus.Phase)
        case paused
        case resumable
        case failed
        case done
        case cancelled

        /// The words `list` shows (and `--json` gives as `state`).
        public var name: String {
            switch self {
            case .running(_, let phase): phase.rawValue
            case .paused: "paused"
            case .resumable: "failed and resumable"
            case .failed: "failed"
            case .done: "done"
            case .cancelled: "cancelled"
            }
        }
    }

    public let id: String
    public let phase: Phase
    public let token: ResumeToken?
    public let record: TransferRecord?
    public let live: LiveStatus?
    private let unfinishedBatch: Bool

    /// nil when neither a token, a record nor a live process knows `id`.
    public init?(id: String, store: TokenStore, token: ResumeToken? = nil) {
        self.id = id
        // Whether a process runs it is read first: a transfer that ends between these reads has written its
        // record and removed its token before it let go of its lock and live status, so what is read after
        // them is what it left. Read the other way round, a token seen just before it went, a record just
        // before it came and no process after made a finished download look killed.
        let live = LiveStatus.load(stateDir: store.directory, id: id)
        let holder = TokenLock.holder(path: store.lockPath(forID: id))
        let token = token ?? (try? store.load(id))
        let record = ResultStore(directory: store.directory).load(id: id)
        (self.token, self.record, self.live) = (token, record, live)
        // A folder upload (`b-…`) has no token: its record answers for it until it ended done.
        unfinishedBatch = token == nil && access(store.state.batch(id), F_OK) == 0
        if let pid = holder ?? live?.pid {
            phase = .running(pid: pid, phase: live?.state ?? .running)
        } else if token != nil || unfinishedBatch {
            switch record?.outcome {
            case .paused?: phase = .paused
            case .failed? where record?.resumable == false: phase = .failed
            default: phase = .resumable  // killed, or stopped without a word: the token continues it
            }
        } else if let record {
            switch record.outcome {
            case .done: phase = .done
            case .cancelled: phase = .cancelled
            case .failed, .paused: phase = .failed
            }
        } else {
            return nil
        }
    }

    public var isRunning: Bool { if case .running = phase { true } else { false } }

    /// The exit status `wait` gives for a transfer that is not running.
    public var exitStatus: Int32 {
        if token != nil || unfinishedBatch {
            if let record, record.outcome == .paused || record.outcome == .failed { return record.exit }
            return 75
        }
        return record?.exit ?? 66
    }
}
