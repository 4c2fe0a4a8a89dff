import Glibc

/// The state folder and everything in it: the one place that knows its layout.
///
/// ```
/// STATE/tokens/<id>.json   resume tokens (0600) and <id>.lock, the lock of a running transfer
/// STATE/results/<id>.json  how each finished, failed or cancelled transfer ended (kept 7 days)
/// STATE/spool/<id>         a stream upload's bytes not yet acknowledged
/// STATE/run/<id>.json      live status of a running transfer (pid, bytes, rate)
/// STATE/logs/<id>.log      what a detached transfer printed
/// STATE/batches/<id>.json  a folder upload (`b-…`): what it is; <id>.done, the files it finished
/// ```
/// Every folder is made with mode 0700 when first needed.
public struct StateDirectory: Sendable, Equatable {
    public let path: String

    public init(_ path: String) { self.path = path }

    /// `$RESUMECTL_STATE_DIR`, else `$XDG_STATE_HOME/resumectl`, else `~/.local/state/resumectl`.
    /// - Parameter variable: `getenv` by default: the whole environment as a dictionary costs a small
    ///   transfer more than everything else it does before connecting.
    public static func located(variable: (String) -> String? = { getenv($0).map { String(cString: $0) } })
        -> StateDirectory
    {
        if let dir = variable("RESUMECTL_STATE_DIR"), !dir.isEmpty { return StateDirectory(dir) }
        if let xdg = variable("XDG_STATE_HOME"), !xdg.isEmpty { return StateDirectory(xdg + "/resumectl") }
        let home =
            variable("HOME").flatMap { $0.isEmpty ? nil : $0 }
            ?? getpwuid(getuid()).flatMap { $0.pointee.pw_dir.map { String(cString: $0) } } ?? "/"
        return StateDirectory(home + "/.local/state/resumectl")
    }

    public var tokens: String { path + "/tokens" }
    public var results: String { path + "/results" }
    public var spool: String { path + "/spool" }
    public var run: String { path + "/run" }
    public var logs: String { path + "/logs" }
    public var batches: String { path + "/batches" }

    public func token(_ id: String) -> String { tokens + "/\(id).json" }
    public func lock(_ id: String) -> String { tokens + "/\(id).lock" }
    public func result(_ id: String) -> String { results + "/\(id).json" }
    public func spool(_ id: String) -> String { spool + "/\(id)" }
    public func status(_ id: String) -> String { run + "/\(id).json" }
    public func log(_ id: String) -> String { logs + "/\(id).log" }
    public func batch(_ id: String) -> String { batches + "/\(id).json" }
    public func batchLog(_ id: String) -> String { batches + "/\(id).done" }

    /// Makes `folder` (one of the above) and the state folder above it, mode 0700, like `mkdir -p`.
    public func make(_ folder: String) throws(TransferError) {
        do { try TokenStore.makeFolder(folder) } catch {
            throw TransferError(.localIO, "\(error)")
        }
    }
}
