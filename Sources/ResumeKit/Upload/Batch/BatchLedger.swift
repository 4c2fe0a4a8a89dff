import Dispatch
import FoundationEssentials
import Glibc
import Synchronization

/// A batch on disk: its record (`batches/<id>.json`, durable before any byte is sent) and the files it
/// finished (`batches/<id>.done`, one JSON line each, appended). A small file's line is made durable with
/// the others that finished meanwhile, by one `fdatasync` at most every 200 ms (a kill before it costs
/// re-sending those few small files); a large file's line is synced before the next file starts.
final class BatchLedger: @unchecked Sendable {
    /// What tells a file finished from the same file changed since.
    struct Stamp: Codable, Hashable, Sendable {
        var size: Int64
        /// Nanoseconds since the epoch.
        var mtime: Int64
        var inode: UInt64

        init(_ st: stat) {
            size = Int64(st.st_size)
            mtime = Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec)
            inode = UInt64(st.st_ino)
        }
    }

    private struct Line: Codable {
        var path: String
        var stamp: Stamp
    }

    private let fd: Int32
    private let pending = Mutex<[UInt8]>([])
    /// One sync at a time; whoever holds it writes every line pending.
    private let syncing = Mutex<Void>(())
    private let closing = Atomic<Bool>(false)
    private let tick = DispatchSemaphore(value: 0)
    private let stopped = DispatchSemaphore(value: 0)
    private var writeError: Int32 = 0

    /// Opens the batch's log for appending (made if missing) and starts the group-commit thread.
    init(state: StateDirectory, id: String) throws(TransferError) {
        try state.make(state.batches)
        fd = open(state.batchLog(id), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw TransferError(.localIO, "cannot write \(state.batchLog(id)): \(String(cString: strerror(errno)))") }
        runOnBackgroundThread("batch-log") { [self] in
            while !closing.load(ordering: .acquiring) {
                _ = tick.wait(timeout: .now() + 0.2)
                _ = try? sync()
            }
            stopped.signal()
        }
    }

    /// Records `relative` as finished; with `now`, durable before this returns.
    func add(_ relative: String, _ stamp: Stamp, now: Bool) throws(TransferError) {
        let line = (try? JSONEncoder().encode(Line(path: relative, stamp: stamp))) ?? Data()
        pending.withLock { $0 += Array(line) + [10] }
        if now { try sync() }
    }

    /// Writes and syncs what is pending; ends the commit thread.
    func close() throws(TransferError) {
        closing.store(true, ordering: .releasing)
        tick.signal()
        stopped.wait()
        defer { Glibc.close(fd) }
        try sync()
    }

    @discardableResult
    private func sync() throws(TransferError) -> Bool {
        let failed: Int32 = syncing.withLock { _ in
            let bytes = pending.withLock { p in defer { p.removeAll() }; return p }
            guard !bytes.isEmpty, writeError == 0 else { return writeError }
            let ok = bytes.withUnsafeBytes { writeAll(fd, $0) } && fdatasync(fd) == 0
            if !ok { writeError = errno }
            return writeError
        }
        guard failed == 0 else { throw TransferError(.localIO, "cannot record finished files: \(String(cString: strerror(failed)))") }
        return true
    }

    // MARK: Reading

    /// The files a batch finished, by relative path (a line a kill tore is ignored).
    static func finished(state: StateDirectory, id: String) -> [String: Stamp] {
        guard let data = FileManager.default.contents(atPath: state.batchLog(id)) else { return [:] }
        var done: [String: Stamp] = [:]
        let decoder = JSONDecoder()
        for line in data.split(separator: 10) {
            if let entry = try? decoder.decode(Line.self, from: Data(line)) { done[entry.path] = entry.stamp }
        }
        return done
    }

    static func record(state: StateDirectory, id: String) -> BatchRecord? {
        guard let data = FileManager.default.contents(atPath: state.batch(id)) else { return nil }
        return try? TokenStore.decoder.decode(BatchRecord.self, from: data)
    }

    /// Writes the record durably (temp file, fsync, rename, folder sync).
    static func save(_ record: BatchRecord, state: StateDirectory) throws(TransferError) {
        try state.make(state.batches)
        do {
            try TokenStore.writeDurably(try TokenStore.encoder.encode(record), to: state.batch(record.id), folder: state.batches)
        } catch { throw TransferError(.localIO, "\(error)") }
    }

    /// Forgets a batch: its record and its log.
    static func remove(state: StateDirectory, id: String) {
        unlink(state.batch(id))
        unlink(state.batchLog(id))
        syncDirectory(state.batches)
    }
}
