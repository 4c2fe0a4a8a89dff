import Synchronization

/// The counts of a running batch, shared by its workers: files done, bytes (finished files plus each
/// upload in flight), what failed; and the pace of progress events (at most four a second).
final class BatchTally: Sendable {
    private struct State {
        var done = 0
        var sent = 0
        var skipped = 0
        var finishedBytes: Int64 = 0
        var inFlight: [Int: Int64] = [:]
        var failed: [(file: BatchFile, error: TransferError)] = []
        var stopped: TransferError?
        var lastEmit = 0.0
    }

    let files: Int
    let total: Int64
    private let state = Mutex(State())

    init(files: Int, total: Int64) {
        self.files = files
        self.total = total
    }

    /// A file's upload moved to `bytes`; returns the progress event to emit when one is due.
    func moved(_ index: Int, to bytes: Int64) -> BatchEvent? {
        state.withLock { s in
            s.inFlight[index] = bytes
            return Self.due(&s, files: files, total: total, force: false)
        }
    }

    /// A file arrived (`sent`) or was skipped; returns the progress event to emit.
    func finished(_ index: Int, size: Int64, sent: Bool) -> BatchEvent? {
        state.withLock { s in
            s.inFlight[index] = nil
            s.done += 1
            s.finishedBytes += size
            if sent { s.sent += 1 } else { s.skipped += 1 }
            return Self.due(&s, files: files, total: total, force: true)
        }
    }

    private static func due(_ s: inout State, files: Int, total: Int64, force: Bool) -> BatchEvent? {
        let now = Monotonic.now
        guard force || now - s.lastEmit >= 0.25 else { return nil }
        s.lastEmit = now
        return .progress(
            files: s.done, of: files, bytes: s.finishedBytes + s.inFlight.values.reduce(0, +), total: total)
    }

    func failed(_ index: Int, _ file: BatchFile, _ error: TransferError) {
        state.withLock { s in
            s.inFlight[index] = nil
            if case .stopped = error.code { s.stopped = s.stopped ?? error } else { s.failed.append((file, error)) }
        }
    }

    func summary(id: String, stopped: TransferError?) -> BatchSummary {
        state.withLock { s in
            BatchSummary(
                id: id, files: files, sent: s.sent, skipped: s.skipped, failed: s.failed, stopped: s.stopped ?? stopped,
                bytes: s.finishedBytes)
        }
    }
}
