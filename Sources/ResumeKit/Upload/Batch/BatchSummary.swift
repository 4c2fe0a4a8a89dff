/// How a batch ended.
public struct BatchSummary: Sendable {
    public var id: String
    public var files: Int
    public var sent: Int
    public var skipped: Int
    public var failed: [(file: BatchFile, error: TransferError)]
    /// Set when the batch as a whole stopped (pause, Ctrl-C): the files not reached are not failures.
    public var stopped: TransferError?
    public var bytes: Int64

    /// 0 when every file arrived; else a stop's own status, else the worst failure's documented one.
    public var exitStatus: Int32 {
        if let stopped { return stopped.exitStatus }
        return ExitStatus.combined(failed.map(\.error.exitStatus))
    }

    /// Whether `resume b-…` can finish what is left.
    public var isResumable: Bool {
        stopped != nil || failed.allSatisfy { $0.error.isResumable || $0.error.code == .retriesExhausted }
    }
}
