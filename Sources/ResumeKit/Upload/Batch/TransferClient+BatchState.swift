import Glibc

/// Batches as `list`, `show` and `cancel` see them.
extension TransferClient {
    /// The record of batch `id` while it is unfinished; nil once it ended done (its result record answers then).
    public func batchRecord(_ id: String) -> BatchRecord? { BatchLedger.record(state: store.state, id: id) }

    /// Files batch `id` finished so far.
    public func batchFinishedCount(_ id: String) -> Int { BatchLedger.earlier(state: store.state, id: id).done.count }

    /// Every unfinished batch.
    public func batchRecords() -> [BatchRecord] { BatchLedger.ids(state: store.state).compactMap(batchRecord) }

    /// Forgets batch `id`: each of its files' unfinished uploads is cancelled as `cancel` does for one
    /// (DELETE, or AbortMultipartUpload unless `keepParts`), then the batch's record and log go.
    /// - Returns: what was done, for the user.
    public func cancelBatch(_ id: String, keepParts: Bool = false) async throws(TransferError) -> String {
        guard let record = batchRecord(id) else { throw TransferError(.inputMissing, "no batch named '\(id)'") }
        let request = record.request(headers: [])
        let files = (try? BatchTree(root: record.folder, follow: record.followSymlinks).files) ?? []
        var cancelled = 0
        for file in files {
            var upload = request.upload
            upload.filePath = file.path
            upload.url = BatchNaming.target(record.target, relative: file.relative)
            let fileID = uploadTokenID(upload)
            guard store.exists(id: fileID) else { continue }
            _ = try await cancel(fileID, keepParts: keepParts)
            cancelled += 1
        }
        try? results.save(TransferRecord(
            id: id, kind: .upload, outcome: .cancelled, exit: 1, resumable: false, url: record.target, path: record.folder, error: "cancelled"))
        BatchLedger.remove(state: store.state, id: id)
        return "cancelled \(id); \(cancelled) unfinished file uploads dropped"
    }
}
