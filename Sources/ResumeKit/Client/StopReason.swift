/// Why a transfer was asked to stop.
public enum StopReason: Int, Sendable {
    /// Ctrl-C (SIGINT).
    case interrupt = 1
    /// `resumectl pause`, SIGTERM or SIGHUP.
    case pause = 2
}
