/// How a batch ended.
public struct BatchSummary: Sendable, Equatable {
    public var id: String
    public var files: Int
    public var sent: Int
    public var skipped: Int
    public var failed: [(file: BatchFile, error: TransferError)]
    /// Set when the batch as a whole stopped (pause, Ctrl-C): the files not reached are not failures.
    public var stopped: TransferError?
    public var bytes: Int64

    public static func == (a: Self, b: Self) -> Bool {
        a.id == b.id && a.files == b.files && a.sent == b.sent && a.skipped == b.skipped && a.bytes == b.bytes
            && a.failed.map(\.file) == b.failed.map(\.file) && a.failed.map(\.error) == b.failed.map(\.error) && a.stopped == b.stopped
    }

    /// 0 when every file arrived; else a stop's own status, else the worst failure's documented one.
    public var exitStatus: Int32 {
        if let stopped { return stopped.exitStatus }
        return ExitStatus.combined(failed.map(\.error.exitStatus))
    }

    /// Whether `resume b-…` can finish what is left.
    public var isResumable: Bool { stopped != nil || failed.allSatisfy { $0.error.isResumable || $0.error.code == .retriesExhausted } }
}
