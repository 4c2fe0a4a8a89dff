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
    public var state: Phase
    public var startAt: Date?
    public var bytes: Int64?
    public var total: Int64?
    public var rate: Double?
    public var updatedAt: Date

    /// The status of a live process, or nil (no file, unreadable, or its process is gone).
    public static func load(stateDir: String, id: String) -> LiveStatus? {
        guard let data = FileManager.default.contents(atPath: StateDirectory(stateDir).status(id)),
            let status = try? TokenStore.decoder.decode(LiveStatus.self, from: data), processIsAlive(status.pid)
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
