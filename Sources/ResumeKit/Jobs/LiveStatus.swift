import FoundationEssentials
import Glibc

/// What a running transfer says about itself in `STATE/run/<id>.json`, for `list`, `wait` and `pause`: its
/// pid, phase, progress and rate, rewritten (no fsync: it is only live information) at most once a second or
/// when the phase changes. A file whose pid is dead (kill -9) counts for nothing: no stale "running".
public struct LiveStatus: Codable, Equatable, Sendable {
    /// What a live process is doing; the raw value is what `list` shows and the file holds.
    public enum Phase: String, Codable, Sendable {
        case running
        case scheduled
        /// `resume --all` holds it until one of its places is free.
        case queued
        case waitingForNetwork = "waiting for network"
    }

    public var pid: Int32
    /// ``processStart(_:)`` of `pid` when the status was first written: a pid alone may name another process
    /// by the time the file is read (the transfer was killed, the machine rebooted), which `pause` would signal.
    public var started: UInt64?
    public var state: Phase
    public var startAt: Date?
    public var bytes: Int64?
    public var total: Int64?
    public var rate: Double?
    public var updatedAt: Date

    /// The status of a live process, or nil (no file, unreadable, or its process is gone).
    public static func load(stateDir: String, id: String) -> LiveStatus? {
        guard let data = FileManager.default.contents(atPath: StateDirectory(stateDir).status(id)),
            let status = try? TokenStore.decoder.decode(LiveStatus.self, from: data), processIsAlive(status.pid),
            let started = status.started, processStart(status.pid) == started
        else { return nil }
        return status
    }

    static let encoder: JSONEncoder = {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys]
        e.dateEncodingStrategy = ISOTime.encoding
        return e
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

/// When process `pid` started, in clock ticks after boot (field 22 of /proc/PID/stat, proc(5)); nil when it
/// is gone. With the pid it names one process: a pid is reused once its process ended.
func processStart(_ pid: Int32) -> UInt64? {
    guard pid > 0, let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
        let close = stat.lastIndex(of: ")")
    else { return nil }
    // After the command's closing parenthesis (it may hold spaces and parentheses) come fields 3 on.
    let fields = stat[stat.index(after: close)...].split(separator: " ")
    return fields.count > 19 ? UInt64(fields[19]) : nil
}
