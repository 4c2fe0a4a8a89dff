import Dispatch
import FoundationEssentials
import Glibc

extension TransferClient {
    /// Uploads every regular file under a folder to a prefix or folder URL as one batch (`b-…`): each file
    /// through the single-file engine, `parallel` at once over one pool of connections and one budget of
    /// requests in flight, the protocol probed once. A small file (``smallFile(_:_:)``) is one request and a
    /// ledger line; a larger one has a token. Run again (or ``resumeBatch(_:headers:cancellation:events:)``),
    /// finished files are skipped, large ones continue from their tokens, small ones are sent again.
    public func uploadBatch(
        _ request: BatchRequest, cancellation: Cancellation = Cancellation(),
        events: @escaping @Sendable (BatchEvent) -> Void = { _ in }
    ) async throws(TransferError) -> BatchSummary {
        try await onOwnThread { () throws(TransferError) in
            try self.runBatch(request, cancellation: cancellation, events: events)
        }
    }

    /// Continues batch `id` as its record describes it; `headers` (logins are never kept) join the kept ones.
    public func resumeBatch(
        _ id: String, headers: [String] = [], cancellation: Cancellation = Cancellation(),
        events: @escaping @Sendable (BatchEvent) -> Void = { _ in }
    ) async throws(TransferError) -> BatchSummary {
        guard let record = BatchLedger.record(state: store.state, id: id) else {
            throw TransferError(.inputMissing, "no batch named '\(id)'")
        }
        if let folder = record.folderRequest(headers: headers) {
            return try await downloadFolder(folder, cancellation: cancellation, events: events)
        }
        return try await uploadBatch(record.request(headers: headers), cancellation: cancellation, events: events)
    }

    /// A file at or above this size has its finished line synced at once: sending it again would cost more than a sync.
    static let batchLargeFile: Int64 = 8 << 20

    /// Up to this (off S3) a file goes without a token, as one request (the draft's complete POST, tus's
    /// creation with the upload, a PUT): a kill in mid-request costs sending it again, at most 1 MiB, where a
    /// token would cost four to six fsyncs on every run (token, lock, result record) and a HEAD to resume.
    static let batchSmallFile: Int64 = 1 << 20

    /// Whether `file` goes as a small file: on S3, one that fits in one part (a single `PutObject`, which could
    /// not resume anyway); elsewhere at most ``batchSmallFile``; never one with a token from an earlier run.
    func smallFile(_ file: BatchTree.File, _ upload: UploadRequest) -> Bool {
        let limit =
            Route.isS3(upload.url)
            ? (try? MultipartPlan.partSize(fileSize: file.size, requested: upload.s3.partSize).size) ?? 0
            : Self.batchSmallFile
        return file.size <= limit && !store.exists(id: uploadTokenID(upload))
    }

    func runBatch(_ request: BatchRequest, cancellation: Cancellation, events: @escaping @Sendable (BatchEvent) -> Void)
        throws(TransferError) -> BatchSummary
    {
        try BatchNaming.checkTarget(request.target)
        guard BatchRequest.isFolder(request.folder) else {
            throw TransferError(.inputMissing, "\(request.folder) is not a folder")
        }
        if Route.isS3(request.target) { _ = try requireS3Answers() }
        _ = try HeaderLines.parse(request.upload.headers)
        let id = request.id
        let lock = try openBatch(id)
        defer { lock.release() }
        let state = store.state
        // The command given again says its options again; the batch keeps its start (and its record, its files).
        var record = BatchRecord(request)
        if let earlier = BatchLedger.record(state: state, id: id) { record.createdAt = earlier.createdAt }
        let tree = try BatchTree(root: record.folder, follow: request.followSymlinks)
        for line in tree.skipped + tree.refused { events(.leftOut(line)) }
        // A sync's plan is made from fresh listings each run, before the batch is recorded: a refused one leaves
        // nothing behind.
        var plan: SyncPlan?
        if request.sync != nil { plan = try syncPlan(request, tree: tree, write: true, cancellation: cancellation) }
        try BatchLedger.save(record, state: state)
        events(.announced(id: id, files: tree.files.count, bytes: tree.bytes))
        let planned = SyncPlan.announce(plan, events: events)

        // One OPTIONS for the batch: what `auto` chooses, or the capabilities of a pinned tus (asked where its
        // files are created, with `Tus-Resumable`), which each file's machine would otherwise ask for again.
        var template = request.upload
        template.batch = id
        let budget = RequestBudget(request.parallel)
        template.s3.parallel = budget.limit  // a large file alone may use every request; the budget shares them
        if let first = tree.files.first, !Route.isS3(request.target) {
            if template.uploadProtocol == .tus {
                template.probed = tusProbe(
                    BatchNaming.target(request.target, relative: first.relative), template.headers, cancellation)
            } else if template.pinnedWire == nil {
                template.probed = try probe(
                    request.target, headers: template.headers, cancellation: cancellation, events: { _ in })
            }
        }
        var earlier = BatchLedger.earlier(state: state, id: id)
        if plan != nil { earlier.done = [:] }  // the target's fresh listing says what arrived
        let ledger = try BatchLedger(state: state, id: id, order: tree.files.map(\.relative))
        let tally = BatchTally(files: tree.files.count, total: tree.bytes)
        let queue = WorkQueue<Void>(count: tree.files.count)  // the tally keeps what each file came to
        withSessionPool { pool in
            var pooled = self
            pooled.transport = pool
            pooled.requestBudget = budget
            pooled.options.computeSHA256 = false  // a file's events say no SHA-256: not read once more for it
            let group = DispatchGroup()
            for _ in 0..<max(1, min(request.parallel, tree.files.count)) {
                group.enter()
                runOnBackgroundThread("batch") { [client = pooled, template, record, earlier, planned] in
                    defer { group.leave() }
                    let session = pool.makeSession()
                    while !cancellation.isStopped, let i = queue.take() {
                        let file = tree.files[i]
                        let item = BatchFile(
                            path: file.path, target: BatchNaming.target(request.target, relative: file.relative))
                        if let keep = planned[file.relative], keep.kind == .keep {
                            events(.file(item, .skipped(reason: keep.reason)))
                            if let progress = tally.finished(i, size: file.size, sent: false) { events(progress) }
                            continue
                        }
                        do throws(TransferError) {
                            let sent = try client.sendBatchFile(
                                file, item, index: i, template: template, earlier: earlier, since: record.createdAt,
                                skipExisting: request.skipExisting, session: session, ledger: ledger, tally: tally,
                                cancellation: cancellation, events: events)
                            if let progress = tally.finished(i, size: file.size, sent: sent) { events(progress) }
                        } catch {
                            var error = error
                            if error.status == 409, planned[file.relative]?.kind == .replace {
                                error.message += " (the target keeps the file it has; serve replaces with --overwrite)"
                            }
                            tally.failed(i, item, error)
                            if case .stopped = error.code {} else { events(.file(item, .failed(error))) }
                        }
                    }
                }
            }
            group.wait()
        }
        if let plan { deleteExtras(plan, request, tally: tally, cancellation: cancellation, events: events) }
        return endBatch(record, ledger: ledger, tally: tally, stop: cancellation.reason)
    }

    /// One file: skipped when this batch sent it before (same size, mtime, inode) or `--skip-existing` (or, for
    /// a small file an earlier run may have sent, the check that flag makes) finds it there; else uploaded (a
    /// file changed since its upload began is sent again from its first byte, its old upload dropped).
    /// - Returns: true when sent, false when skipped.
    private func sendBatchFile(
        _ file: BatchTree.File, _ item: BatchFile, index: Int, template: UploadRequest, earlier: BatchLedger.Earlier,
        since: Date, skipExisting: Bool,
        session: any TransportSession, ledger: BatchLedger, tally: BatchTally, cancellation: Cancellation,
        events: @escaping @Sendable (BatchEvent) -> Void
    ) throws(TransferError) -> Bool {
        if earlier.done[file.relative] == file.stamp {
            events(.file(item, .skipped(reason: "sent earlier by this batch")))
            return false
        }
        var upload = template
        upload.filePath = file.path
        upload.url = item.target
        let small = smallFile(file, upload)
        // Killed after the server took the file but before its line was synced: the engine's own result
        // record (synced before its token went) says it arrived, so it is not sent again. Records keep whole
        // seconds: one ended within a second of the batch's start or the file's last change still counts.
        if !small, let ended = results.load(id: uploadTokenID(upload)), ended.outcome == .done,
            ended.bytes == file.size,
            ended.endedAt.timeIntervalSince1970 + 1 >= max(since.timeIntervalSince1970, Double(file.stamp.mtime) / 1e9)
        {
            try ledger.add(file.relative, file.stamp, now: false)
            events(.file(item, .skipped(reason: "sent earlier by this batch")))
            return false
        }
        if skipExisting || small && earlier.mayHaveSent(file.relative),
            try targetHolds(file, upload, session: session, cancellation: cancellation)
        {
            try ledger.add(file.relative, file.stamp, now: false)
            events(.file(item, .skipped(reason: "the target holds the same bytes")))
            return false
        }
        try ledger.begin(index)
        events(.file(item, .started))
        let forward: EventHandler = { event in
            switch event {
            case .progress(let bytes, _, _): if let p = tally.moved(index, to: bytes) { events(p) }
            case .started, .completed, .paused: break
            default: events(.transfer(item, event))
            }
        }
        do {
            _ = try runUpload(upload, smallFile: small ? session : nil, cancellation: cancellation, events: forward)
        } catch  where error.code == .sourceChanged {
            let old = uploadTokenID(upload)
            if let token = try? store.load(old), case .opened(let opened)? = try? open(.cancel(token)) {
                _ = try? TransferCancel(self, opened).dropServerUpload()
                opened.lock.release()
            }
            store.remove(id: old)
            events(.file(item, .restarted(reason: "\(file.path) changed since its upload began")))
            _ = try runUpload(upload, cancellation: cancellation, events: forward)
        } catch  where error.status == 409 {
            // A server that never replaces files (serve) refuses a second creation; when the request before a
            // kill or a cut arrived whole and only its answer was lost, the file there is this one.
            guard try targetHolds(file, upload, session: session, cancellation: cancellation) else { throw error }
            store.remove(id: uploadTokenID(upload))
        }
        try ledger.add(file.relative, file.stamp, now: file.size >= Self.batchLargeFile)
        events(.file(item, .completed(bytes: file.size)))
        return true
    }

    /// tus's capabilities from one OPTIONS; nil (each file then asks) when the answer names none.
    private func tusProbe(_ url: String, _ headers: [String], _ cancellation: Cancellation) -> ProtocolProbe? {
        var fields = (try? HeaderLines.parse(headers)) ?? [:]
        fields.set("Tus-Resumable", "1.0.0")
        let result = transport.makeSession().headOnly(
            TransferRequest(method: "OPTIONS", url: url, headers: fields), settings: options.transport,
            cancellation: cancellation)
        guard result.outcome == .completed, let head = result.head, let found = TusCapabilities(head) else {
            return nil
        }
        return .tus(found)
    }

    /// `--skip-existing`: one HEAD (signed for S3) and the file's checksum.
    private func targetHolds(
        _ file: BatchTree.File, _ upload: UploadRequest, session: any TransportSession, cancellation: Cancellation
    )
        throws(TransferError) -> Bool
    {
        var url = upload.url
        var settings = options.transport
        if Route.isS3(upload.url) {
            let target = try S3Target(
                try S3Location.parse(upload.url), choices: upload.s3.choices, forcePathStyle: upload.s3.forcePathStyle)
            url = target.url()
            settings = target.signing(settings)
        }
        let headers = (try? HeaderLines.parse(upload.headers)) ?? [:]
        let partSize = (try? MultipartPlan.partSize(fileSize: file.size, requested: upload.s3.partSize).0) ?? file.size
        return try BatchSkip.check(
            file, url: url, partSize: max(1, partSize), session: session, settings: settings, headers: headers,
            cancellation: cancellation)
    }

    /// Closes the batch's log and writes its result record (what `wait`, `show` and `list --all` read); a batch
    /// that ended done forgets its record and log. Its stop: a worker's first, then ours, then the log's failure.
    func endBatch(_ record: BatchRecord, ledger: BatchLedger, tally: BatchTally, stop: StopReason?) -> BatchSummary {
        var closed: TransferError?
        do { try ledger.close() } catch { closed = error }
        let id = record.id
        let stopped = stop.map { TransferError.stopped($0, "; resume with: resumectl resume \(id)", tokenID: id) }
        let summary = tally.summary(id: id, stopped: stopped ?? closed)
        let status = summary.exitStatus
        let outcome: TransferRecord.Outcome = status == 0 ? .done : summary.stopped != nil ? .paused : .failed
        let error =
            summary.stopped?.message
            ?? summary.failed.first.map {
                "\(summary.failed.count) of \(summary.files) files failed; first: \($0.error.message)"
            }
        try? results.save(
            TransferRecord(
                id: summary.id, kind: record.download != nil ? .download : .upload, outcome: outcome, exit: status,
                resumable: status != 0, url: record.target, path: record.folder,
                bytes: summary.bytes, error: error))
        if status == 0 { BatchLedger.remove(state: store.state, id: summary.id) }
        return summary
    }
}

/// Batches as `list`, `show` and `cancel` see them.
extension TransferClient {
    /// The record of batch `id` while it is unfinished; nil once it ended done (its result record answers then).
    public func batchRecord(_ id: String) -> BatchRecord? { BatchLedger.record(state: store.state, id: id) }

    /// Files batch `id` finished so far.
    public func batchFinishedCount(_ id: String) -> Int {
        let earlier = BatchLedger.earlier(state: store.state, id: id)
        return earlier.done.count + earlier.listed.count
    }

    /// Every unfinished batch.
    public func batchRecords() -> [BatchRecord] { BatchLedger.ids(state: store.state).compactMap(batchRecord) }

    /// Forgets batch `id`: each of its files' unfinished transfers is cancelled as `cancel` does for one (an
    /// upload's DELETE, or AbortMultipartUpload unless `keepParts`; a download's `.part`), then the batch's
    /// record and log go; the files it finished stay.
    /// - Returns: what was done, for the user.
    public func cancelBatch(_ id: String, keepParts: Bool = false) async throws(TransferError) -> String {
        guard let record = batchRecord(id) else { throw TransferError(.inputMissing, "no batch named '\(id)'") }
        let isDownload = record.download != nil
        let ids: [String]
        if isDownload {
            ids = store.all().tokens.filter { $0.download.map { $0.path.hasPrefix(record.folder + "/") } == true }.map(
                \.id)
        } else {
            let upload = record.request(headers: []).upload
            ids = ((try? BatchTree(root: record.folder, follow: record.followSymlinks).files) ?? []).map { file in
                var one = upload
                one.filePath = file.path
                one.url = BatchNaming.target(record.target, relative: file.relative)
                return uploadTokenID(one)
            }.filter { store.exists(id: $0) }
        }
        for fileID in ids { _ = try await cancel(fileID, keepParts: keepParts) }
        try? results.save(
            TransferRecord(
                id: id, kind: isDownload ? .download : .upload, outcome: .cancelled, exit: 1, resumable: false,
                url: record.target,
                path: record.folder, error: "cancelled"))
        BatchLedger.remove(state: store.state, id: id)
        return "cancelled \(id); \(ids.count) unfinished \(isDownload ? "downloads" : "file uploads") dropped"
    }
}
