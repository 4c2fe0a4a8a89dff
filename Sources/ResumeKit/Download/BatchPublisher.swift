import Dispatch
import Glibc
import Synchronization

/// Publishes the small files of a list in groups. A file's data must be on disk before its rename, and
/// an fdatasync per file waits for a journal commit of its own; here one `syncfs` covers every file
/// finished meanwhile (a group commit), then each is renamed and each folder synced once. Workers hand
/// a finished file over and go on with the next one.
final class BatchPublisher: @unchecked Sendable {
    /// Where one list entry hands its finished file over.
    struct Slot {
        let publisher: BatchPublisher
        let index: Int

        /// Takes over `part` (still open and locked, so no other process can touch it before the rename).
        func submit(_ finished: Publish.Finished, part: PartFile) {
            publisher.submit(Item(index: index, finished: finished, part: part))
        }
    }

    fileprivate struct Item: @unchecked Sendable {
        let index: Int
        let finished: Publish.Finished
        let part: PartFile
    }

    private let store: TokenStore
    private let state = Mutex<(pending: [Item], closing: Bool)>(([], false))
    private let wake = DispatchSemaphore(value: 0)
    private let stopped = DispatchSemaphore(value: 0)
    /// Written by the publishing thread only, read after it stopped.
    private var failures: [Int: TransferError] = [:]

    init(store: TokenStore) {
        self.store = store
        runOnBackgroundThread("publish") { [self] in loop() }
    }

    func slot(_ index: Int) -> Slot { Slot(publisher: self, index: index) }

    fileprivate func submit(_ item: Item) {
        state.withLock { $0.pending.append(item) }
        wake.signal()
    }

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
        // One syncfs per filesystem, not one fdatasync per file.
        var syncErrors: [UInt: Int32] = [:]
        var devices: [UInt] = []
        for item in batch {
            var st = stat()
            let device = fstat(item.part.fileDescriptor, &st) == 0 ? UInt(st.st_dev) : UInt.max
            devices.append(device)
            if syncErrors[device] == nil { syncErrors[device] = syncFileSystem(containing: item.part.fileDescriptor) == 0 ? 0 : errno }
        }
        var folders: Set<String> = []
        var placed: [Item] = []
        for (item, device) in zip(batch, devices) {
            defer { item.part.close() }
            if let err = syncErrors[device], err != 0 {
                failures[item.index] = TransferError(.localIO,
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
}
