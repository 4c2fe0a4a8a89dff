import Dispatch
import FoundationEssentials
import Glibc
import Synchronization

/// A batch on disk: its record (`batches/<id>.json`, durable before any byte is sent) and the files it
/// finished (`batches/<id>.done`, one JSON line each, appended). A small file's line is made durable with
/// the others that finished meanwhile, by one `fdatasync` at most every 200 ms; a large file's line is
/// synced before the next file starts.
///
/// So that a kill between a small file's arrival and that sync does not send it again, the log also
/// claims files as begun, in the tree's order and ``claimAhead`` at a time, durably before any of them is
/// sent: a later run asks the target (one HEAD) only about the claimed files that have no line.
final class BatchLedger: @unchecked Sendable {
    /// What tells a file finished from the same file changed since (`mtime` in nanoseconds since the epoch).
    struct Stamp: Codable, Hashable, Sendable {
        var size: Int64
        var mtime: Int64
        var inode: UInt64

        init(_ st: stat) {
            size = Int64(st.st_size)
            mtime = Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec)
            inode = UInt64(st.st_ino)
        }
    }

    /// A finished file (`path`, and its `stamp`, or for a download what its listing said: `listed`), or a
    /// claim: every file up to `begun` in the tree's order may have been sent.
    private struct Line: Codable {
        var path: String?
        var stamp: Stamp?
        var listed: String?
        var begun: String?
    }

    /// What earlier runs of the batch left: the files finished, and the last file claimed as begun.
    struct Earlier {
        var done: [String: Stamp] = [:]
        /// A folder download's finished files, with what the listing said of each.
        var listed: [String: String] = [:]
        var begun: String?

        /// Whether an earlier run may have sent the file at `relative` without its line reaching the disk.
        func mayHaveSent(_ relative: String) -> Bool { done[relative] == nil && begun.map { relative <= $0 } == true }
    }

    /// Files claimed at once: a claim costs one sync; a kill costs at most this many HEADs on the next run.
    static let claimAhead = 64
    /// The files' relative paths in the tree's order, and how many of them are claimed.
    private let order: [String]
    private let claimed = Atomic<Int>(0)
    private let claiming = Mutex<Void>(())

    private let fd: Int32
    private let pending = Mutex<[UInt8]>([])
    /// One sync at a time; whoever holds it writes every line pending.
    private let syncing = Mutex<Void>(())
    private let closing = Atomic<Bool>(false)
    private let tick = DispatchSemaphore(value: 0)
    private let stopped = DispatchSemaphore(value: 0)
    private var writeError: Int32 = 0

    /// Opens the batch's log for appending (made if missing) and starts the group-commit thread.
    init(state: StateDirectory, id: String, order: [String]) throws(TransferError) {
        self.order = order
        try state.make(state.batches)
        fd = open(state.batchLog(id), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw TransferError(.localIO, "cannot write \(state.batchLog(id)): \(String(cString: strerror(errno)))")
        }
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
        append(Line(path: relative, stamp: stamp))
        if now { try sync() }
    }

    /// Records a downloaded file as finished, with what its listing said; durable within 200 ms.
    func add(_ relative: String, listed: String) {
        append(Line(path: relative, listed: listed))
    }

    /// Before the file at `index` (of `order`) is sent: unless claimed already, it and the next ones are, durably.
    func begin(_ index: Int) throws(TransferError) {
        guard index >= claimed.load(ordering: .acquiring) else { return }
        try claiming.withLock { _ throws(TransferError) in
            guard index >= claimed.load(ordering: .acquiring) else { return }
            let through = min(order.count, index + Self.claimAhead)
            append(Line(begun: order[through - 1]))
            try sync()
            claimed.store(through, ordering: .releasing)
        }
    }

    private func append(_ line: Line) {
        let bytes = (try? JSONEncoder().encode(line)) ?? Data()
        pending.withLock { $0 += Array(bytes) + [10] }
    }

    /// Writes and syncs what is pending; ends the commit thread.
    func close() throws(TransferError) {
        closing.store(true, ordering: .releasing)
        tick.signal()
        stopped.wait()
        defer { Glibc.close(fd) }
        try sync()
    }

    private func sync() throws(TransferError) {
        let failed: Int32 = syncing.withLock { _ in
            let bytes = pending.withLock { p in
                defer { p.removeAll() }; return p
            }
            guard !bytes.isEmpty, writeError == 0 else { return writeError }
            let ok = bytes.withUnsafeBytes { writeAll(fd, $0) } && fdatasync(fd) == 0
            if !ok { writeError = errno }
            return writeError
        }
        guard failed == 0 else {
            throw TransferError(.localIO, "cannot record finished files: \(String(cString: strerror(failed)))")
        }
    }

    // MARK: Reading

    /// What the batch's log holds (a line a kill tore is ignored).
    static func earlier(state: StateDirectory, id: String) -> Earlier {
        guard let data = FileManager.default.contents(atPath: state.batchLog(id)) else { return Earlier() }
        var earlier = Earlier()
        let decoder = JSONDecoder()
        for entry in data.split(separator: 10).compactMap({ try? decoder.decode(Line.self, from: Data($0)) }) {
            if let path = entry.path, let stamp = entry.stamp { earlier.done[path] = stamp }
            if let path = entry.path, let listed = entry.listed { earlier.listed[path] = listed }
            if let begun = entry.begun, earlier.begun.map({ begun > $0 }) ?? true { earlier.begun = begun }
        }
        return earlier
    }

    /// The batches that have a record (unfinished ones).
    static func ids(state: StateDirectory) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: state.batches)) ?? []
        return names.sorted().filter { $0.hasSuffix(".json") }.map { String($0.dropLast(5)) }
    }

    static func record(state: StateDirectory, id: String) -> BatchRecord? {
        guard let data = FileManager.default.contents(atPath: state.batch(id)) else { return nil }
        return try? TokenStore.decoder.decode(BatchRecord.self, from: data)
    }

    /// Writes the record durably (temp file, fsync, rename, folder sync).
    static func save(_ record: BatchRecord, state: StateDirectory) throws(TransferError) {
        try state.make(state.batches)
        do {
            try TokenStore.writeDurably(
                try TokenStore.encoder.encode(record), to: state.batch(record.id), folder: state.batches)
        } catch { throw TransferError(.localIO, "\(error)") }
    }

    /// Forgets a batch: its record and its log.
    static func remove(state: StateDirectory, id: String) {
        unlink(state.batch(id))
        unlink(state.batchLog(id))
        syncDirectory(state.batches)
    }
}
