import FoundationEssentials
import Glibc
import Synchronization

/// What a running transfer says about itself in `STATE/run/<id>.json`, for `list`, `wait` and `pause`:
/// its pid, its phase (`running`, `scheduled`, `waiting for network`), its progress and rate. The
/// process rewrites it (temp file + rename, no fsync: it is only live information) at most once a second,
/// or at once when the phase changes, and removes it when it ends. A file whose pid is dead (kill -9)
/// counts for nothing, so `list` never shows a stale "running".
public struct LiveStatus: Codable, Equatable, Sendable {
    public var pid: Int32
    public var state: String
    public var startAt: Date?
    public var bytes: Int64?
    public var total: Int64?
    public var rate: Double?
    public var updatedAt: Date

    public static func path(stateDir: String, id: String) -> String { StateDirectory(stateDir).status(id) }

    /// The status of a live process, or nil (no file, unreadable, or its process is gone).
    public static func load(stateDir: String, id: String) -> LiveStatus? {
        guard let data = FileManager.default.contents(atPath: path(stateDir: stateDir, id: id)),
            let status = try? decoder.decode(LiveStatus.self, from: data), processIsAlive(status.pid)
        else { return nil }
        return status
    }

    static let encoder: JSONEncoder = {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys]
        e.dateEncodingStrategy = ISOTime.encoding
        return e
    }()

    static let decoder: JSONDecoder = {
        let d = JSONDecoder()
        d.dateDecodingStrategy = ISOTime.decoding
        return d
    }()
}

func processIsAlive(_ pid: Int32) -> Bool {
    guard pid > 0 else { return false }
    if kill(pid, 0) == 0 || errno == EPERM {
        // A zombie (exited, not yet reaped) is not running.
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return true }
        return stat[stat.index(after: close)...].first(where: { $0 != " " }) != "Z"
    }
    return false
}

/// Keeps `STATE/run/<id>.json` up to date from a transfer's events.
public final class LiveStatusWriter: @unchecked Sendable {
    private let file: String
    private let folder: String
    private let state: Mutex<(status: LiveStatus, lastWrite: Double)>
    /// Another live process holds this transfer's lock (this one will be refused): its status is left alone.
    private let inert: Bool

    public init(stateDir: String, id: String, phase: String = "running", startAt: Date? = nil) {
        folder = StateDirectory(stateDir).run
        file = LiveStatus.path(stateDir: stateDir, id: id)
        // Written below, so the first progress (or `started`) waits its second like any other: a small
        // transfer writes its status once, not twice.
        state = Mutex((LiveStatus(pid: getpid(), state: phase, startAt: startAt, updatedAt: Date()), Self.now()))
        let holder = TokenLock.holder(path: TokenStore(directory: stateDir).lockPath(forID: id))
        inert = holder != nil && holder != getpid()
        guard !inert else { return }
        mkdir(stateDir, 0o700)
        mkdir(folder, 0o700)
        state.withLock { write($0.status) }
    }

    public func set(phase: String, startAt: Date? = nil) {
        guard !inert else { return }
        state.withLock {
            guard $0.status.state != phase || $0.status.startAt != startAt else { return }
            $0.status.state = phase
            $0.status.startAt = startAt
            $0.lastWrite = Self.now()
            write($0.status)
        }
    }

    public func handle(_ event: TransferEvent) {
        guard !inert else { return }
        state.withLock {
            var phaseChanged = false
            switch event {
            case .progress(let bytes, let total, let rate):
                $0.status.bytes = bytes
                $0.status.total = total
                $0.status.rate = rate
                phaseChanged = $0.status.state != "running"
                $0.status.state = "running"
            case .started(_, _, _, let offset, let total):
                $0.status.bytes = offset
                $0.status.total = total
                phaseChanged = $0.status.state != "running"
                $0.status.state = "running"
            case .waitingForNetwork:
                phaseChanged = $0.status.state != "waiting for network"
                $0.status.state = "waiting for network"
                $0.status.rate = 0
            default:
                return
            }
            let t = Self.now()
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
        let temp = file + ".tmp.\(getpid())"
        let fd = open(temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        _ = data.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        close(fd)
        if rename(temp, file) != 0 { unlink(temp) }
    }

    private static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}

/// Where a transfer stands, from its lock (is the holder alive?), its live status, its token and its record.
public struct TransferState {
    public enum Phase: Equatable {
        case running(pid: Int32, phase: String)
        case paused
        case resumable
        case failed
        case done
        case cancelled

        /// The words `list` shows (and `--json` gives as `state`).
        public var name: String {
            switch self {
            case .running(_, let phase): phase
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
        let results = ResultStore(directory: store.directory)
        let token = token ?? (try? store.load(id))
        let record = results.load(id: id)
        let live = LiveStatus.load(stateDir: store.directory, id: id)
        let holder = TokenLock.holder(path: store.lockPath(forID: id))
        self.token = token
        self.record = record
        self.live = live
        // A folder upload (`b-…`) has no token: its record answers for it until it ended done.
        unfinishedBatch = token == nil && access(store.state.batch(id), F_OK) == 0
        if let pid = holder ?? live?.pid {
            phase = .running(pid: pid, phase: live?.state ?? "running")
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
