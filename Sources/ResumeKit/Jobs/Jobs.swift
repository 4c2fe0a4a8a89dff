import Glibc

/// Transfers running in other processes, seen through the state folder: which process runs one, and a
/// stop that signals it as `pause` does and waits until it has committed and let go.
public enum Jobs {
    /// The process running transfer `id`: the holder of its lock, else a scheduled or detached one's live status.
    public static func runningPID(id: String, store: TokenStore) -> Int32? {
        TokenLock.holder(path: store.lockPath(forID: id)) ?? LiveStatus.load(stateDir: store.directory, id: id)?.pid
    }

    /// How a stop went.
    public enum StopOutcome: Sendable, Equatable {
        /// Nothing ran the transfer.
        case notRunning
        /// It ran, got SIGTERM, committed and ended.
        case stopped(pid: Int32)
        /// It did not end within the time given (it may still).
        case stillRunning(pid: Int32)
        /// The signal could not be sent (errno).
        case cannotSignal(pid: Int32, errno: Int32)
    }

    /// Sends SIGTERM to the process running `id` and waits up to `seconds` for it to let go of the lock and
    /// its live status. The wait wakes every 20 ms; `cancellation` (Ctrl-C of the waiting command) ends it.
    public static func stop(
        id: String, store: TokenStore, within seconds: Double, cancellation: Cancellation = Cancellation()
    ) -> StopOutcome {
        guard let pid = runningPID(id: id, store: store) else { return .notRunning }
        guard kill(pid, SIGTERM) == 0 else { return .cannotSignal(pid: pid, errno: errno) }
        let deadline = Monotonic.now + seconds
        while runningPID(id: id, store: store) != nil {
            if Monotonic.now > deadline { return .stillRunning(pid: pid) }
            if !cancellation.sleep(seconds: 0.02) { return .stillRunning(pid: pid) }
        }
        return .stopped(pid: pid)
    }
}
