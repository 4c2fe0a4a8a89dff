/// What a running batch reports, in order. The CLI renders these as a progress line or as `--json` events.
public enum BatchEvent: Sendable {
    /// Before any byte is sent: the id that `pause`, `resume`, `show`, `wait` and `cancel` take.
    case announced(id: String, files: Int, bytes: Int64)
    /// A file left out (a link, a special file, a name no target can carry): one line each.
    case leftOut(String)
    case file(BatchFile, BatchFileEvent)
    /// Files done of all, and bytes (at most four a second).
    case progress(files: Int, of: Int, bytes: Int64, total: Int64)
    /// A retry, a note of one file's upload (the engine's own events).
    case transfer(BatchFile, TransferEvent)
}

/// One file of a batch: where it is and where it goes.
public struct BatchFile: Sendable, Equatable {
    public var path: String
    public var target: String
}

public enum BatchFileEvent: Sendable, Equatable {
    case started
    case completed(bytes: Int64)
    /// `reason`: the target holds it already (`--skip-existing`), or this batch sent it earlier.
    case skipped(reason: String)
    /// Changed since its upload began: sent again from its first byte.
    case restarted(reason: String)
    case failed(TransferError)
}

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
