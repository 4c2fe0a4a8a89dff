import Dispatch
import Glibc
import Synchronization

/// Publishes the small files of a list in groups. A file's data must be on disk before its rename, and an
/// fdatasync per file waits for a journal commit of its own; here one `syncfs` covers every file finished
/// meanwhile (a group commit), then each is renamed and each folder synced once. When other programs left
/// much to write back (which a `syncfs` would wait for), the worker that finished a file syncs it alone:
/// the workers' syncs run at once, where this thread's would run one after another.
final class BatchPublisher: @unchecked Sendable {
    /// Where one list entry hands its finished file over.
    struct Slot {
        let publisher: BatchPublisher
        let index: Int

        /// Whether the worker should sync its file before handing it over (the machine has a writeback
        /// backlog, as of the last group).
        var syncsAlone: Bool { publisher.syncsAlone.load(ordering: .relaxed) }

        /// Takes over `part` (still open and locked, so no other process can touch it before the rename);
        /// `synced`: its data is on disk already.
        func submit(_ finished: Publish.Finished, part: PartFile, synced: Bool = false) {
            let item = Item(index: index, finished: finished, part: part, synced: synced)
            publisher.state.withLock { $0.pending.append(item) }
            publisher.wake.signal()
        }
    }

    private struct Item: @unchecked Sendable {
        let index: Int
        let finished: Publish.Finished
        let part: PartFile
        let synced: Bool
    }

    private let store: TokenStore
    private let state = Mutex<(pending: [Item], closing: Bool)>(([], false))
    private let wake = DispatchSemaphore(value: 0)
    private let stopped = DispatchSemaphore(value: 0)
    /// Written by the publishing thread only, read after it stopped.
    private var failures: [Int: TransferError] = [:]
    /// Set by the publishing thread from each group's look at the backlog; read by the workers.
    private let syncsAlone = Atomic<Bool>(false)

    init(store: TokenStore) {
        self.store = store
        runOnBackgroundThread("publish") { [self] in loop() }
    }

    func slot(_ index: Int) -> Slot { Slot(publisher: self, index: index) }

    /// Publishes whatever is left, then stops. Call it once no worker submits any more.
    /// - Returns: the entries whose file could not be published, by list index.
    func finish() -> [Int: TransferError] {
        state.withLock { $0.closing = true }
        wake.signal()
        stopped.wait()
        return failures
    }

    private func loop() {
        while true {
            wake.wait()
            let (batch, closing) = state.withLock { s in
                defer { s.pending.removeAll() }
                return (s.pending, s.closing)
            }
            publish(batch)
            if closing { break }
        }
        stopped.signal()
    }

    private func publish(_ batch: [Item]) {
        guard !batch.isEmpty else { return }
        defer { for item in batch { item.part.close() } }
        let syncErrors = syncData(of: batch)
        var folders: Set<String> = []
        var placed: [Item] = []
        for (item, err) in zip(batch, syncErrors) {
            if err != 0 {
                failures[item.index] = TransferError(
                    .localIO,
                    "cannot write \(item.finished.download.partPath): \(String(cString: strerror(err)))")
                continue
            }
            do throws(TransferError) {
                try Publish.rename(item.finished)
                folders.insert(Paths.parent(of: item.finished.download.path))
                placed.append(item)
            } catch {
                failures[item.index] = error
            }
        }
        for folder in folders { syncDirectory(folder) }
        for item in placed { Publish.complete(item.finished, store: store) }
    }

    /// Makes each item's data durable: one `syncfs` per file system, unless the machine has much else to write
    /// back (see WritebackBacklog). Returns errno per item (0 when synced).
    private func syncData(of batch: [Item]) -> [Int32] {
        let own = batch.reduce(Int64(0)) { $0 + ($1.synced ? 0 : $1.finished.bytes) }
        let groupCommit = WritebackBacklog.prefersSyncfs(own: own, backlog: WritebackBacklog.current())
        syncsAlone.store(!groupCommit, ordering: .relaxed)
        guard groupCommit else {
            return batch.map { $0.synced || fdatasync($0.part.fileDescriptor) == 0 ? 0 : errno }
        }
        var errors = syncFileSystems(of: batch.filter { !$0.synced }).makeIterator()
        return batch.map { $0.synced ? 0 : errors.next() ?? 0 }
    }

    /// One `syncfs` for each file system the items are on; errno per item, 0 when synced.
    private func syncFileSystems(of items: [Item]) -> [Int32] {
        var byDevice: [UInt: Int32] = [:]
        return items.map { item in
            var st = stat()
            let device = fstat(item.part.fileDescriptor, &st) == 0 ? UInt(st.st_dev) : UInt.max
            if let known = byDevice[device] { return known }
            let result = syncFileSystem(containing: item.part.fileDescriptor) == 0 ? 0 : errno
            byDevice[device] = result
            return result
        }
    }
}
