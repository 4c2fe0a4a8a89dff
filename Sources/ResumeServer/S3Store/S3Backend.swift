import Glibc
import ResumeKit
import Synchronization

/// `serve --store s3://BUCKET/PREFIX/`: uploads kept in S3 (``S3UploadStore``), each appending request
/// holding the upload's lock on S3 (``S3Lock``) unless `--single-instance` says no other instance
/// exists (then this process's ``UploadTable`` claim is the only lock needed).
final class S3Backend: UploadBackend, UploadRemote {
    let store: S3UploadStore
    let cutter: S3PartCutter
    /// This process's holder id in lock grants.
    let instance: String
    /// Milliseconds a lock grant lasts.
    let lockLifetime: Int64
    let singleInstance: Bool
    /// `--overwrite`: a completion may replace an object.
    let overwrite: Bool
    let log: (@Sendable (String) -> Void)?
    /// What the uploads' bodies hold in memory, all together (received, or in parts not yet acknowledged).
    let bodyMemory: BodyMemory
    /// `--on-upload-complete`; due runs are kept in the records (see ``runHookIfDue(_:)``).
    let hooks: HookRunner?
    /// Milliseconds an instance has to run a hook it holds before another may take it over.
    var hookWindow: Int64 { store.hookWindow }
    /// The uploads whose hook runs in this process now.
    let hooksRunning = Mutex<Set<String>>([])

    /// Nothing to bring back: the table reads each upload from S3 when a request names it (``UploadRemote``).
    func recover(into table: UploadTable, replacing: Bool, log: (String) -> Void) {}

    init(
        store: S3UploadStore, partSize: Int64, instance: String, lockLifetime: Int64, singleInstance: Bool,
        overwrite: Bool, hooks: HookRunner? = nil, bodyMemory: BodyMemory = BodyMemory(),
        log: (@Sendable (String) -> Void)?
    ) {
        self.hooks = hooks
        self.bodyMemory = bodyMemory
        self.store = store
        self.overwrite = overwrite
        cutter = S3PartCutter(partSize: partSize)
        self.instance = instance
        self.lockLifetime = lockLifetime
        self.singleInstance = singleInstance
        self.log = log
    }

    /// Takes the upload's lock (`nil` with `--single-instance`); 423 when another instance holds it.
    func lock(_ id: String) throws(UploadFailure) -> S3Lock? {
        guard !singleInstance else { return nil }
        let lock = S3Lock(client: store.client, key: store.keys.lock(id), holder: instance, lifetime: lockLifetime)
        switch lock.acquire() {
        case .held: return lock
        case .unavailable(let reason): throw UploadFailure(status: 503, "the upload's lock on S3: \(reason)")
        case .busy, .lost, .released: throw UploadFailure(status: 423, "another request is writing this upload")
        }
    }

    func create(_ record: UploadRecord) throws(UploadFailure) {
        _ = try store.create(record)
    }

    /// Under the lock: the tail (or, for an empty upload, nothing) becomes the last part, and the
    /// multipart upload is completed onto the final key.
    func finish(_ record: UploadRecord, replacing: Bool) throws(UploadFailure) {
        let held = try lockToFinish(record.id)
        defer { held?.release() }
        guard let (upload, progress) = try store.load(record.id) else {
            throw UploadFailure(status: 404, "the upload is gone from S3")
        }
        if upload.upload.phase == .finishing { return runHookIfDue(upload) }
        guard progress.offset == record.offset else {
            throw UploadFailure(status: 409, "the upload is at \(progress.offset) on S3, not at \(record.offset)")
        }
        var parts = progress.parts
        if progress.tail > 0 || parts.isEmpty {
            let tail = progress.tail > 0 ? try store.readTail(record.id) : []
            parts.append(try store.uploadPart(upload, number: parts.count + 1, tail))
        }
        var completing = upload
        completing.upload.length = record.length ?? record.offset
        runHookIfDue(try store.complete(completing, parts: parts, replacing: replacing))
        store.client.metrics?.uploadFinished(record.kind)
    }

    /// The lock for a completion. Every byte is on S3, so whoever holds it is another instance completing
    /// the upload too (one that read it, ``load(_:)``, between this request's last write and its
    /// completion) or a request about to be refused: its turn is waited for, up to a lock's lifetime,
    /// rather than this request refused with its bytes stored; the upload is then read again.
    private func lockToFinish(_ id: String) throws(UploadFailure) -> S3Lock? {
        let deadline = WallClock.millis() + lockLifetime
        while true {
            do {
                return try lock(id)
            } catch  where error.status == 423 && WallClock.millis() < deadline {
                usleep(100_000)
            }
        }
    }

    /// tus concatenation: a multipart upload on the final key, its parts from the partial uploads' objects
    /// (``S3JoinPlan``), completed as any upload is. A failure aborts it; a crash leaves a multipart upload,
    /// never an object, which the expiry sweep aborts (or, its every part there, completes).
    func concatenate(_ record: UploadRecord, parts: [UploadRecord], replacing: Bool) throws(UploadFailure)
        -> UploadRecord
    {
        let plan = S3JoinPlan.parts(parts.map { $0.length ?? 0 }, minimum: cutter.partSize)
        guard plan.count <= MultipartPlan.maximumParts else {
            throw UploadFailure(status: 413, "more than S3's 10,000 parts")
        }
        let upload = try store.create(record, checksum: nil)
        let keys = parts.map(store.finalKey)
        do {
            var listed: [ListedPart] = []
            for (index, part) in plan.enumerated() {
                listed.append(try store.joinPart(upload, number: index + 1, part, keys: keys))
            }
            runHookIfDue(try store.complete(upload, parts: listed, replacing: replacing))
        } catch {
            store.remove(upload)
            throw error
        }
        store.client.metrics?.uploadFinished(record.kind)
        var done = record
        done.offset = record.length ?? 0
        return done
    }

    func remove(_ id: String) {
        if let record = try? store.record(id) { store.remove(record) }
    }

    func makeSink(_ setup: UploadSinkSetup) -> any UploadSink {
        S3Appender(backend: self, setup: setup)
    }

    /// An upload whose every byte is on S3 but that was never completed (its instance died between the
    /// last part and the completion, or the completion lost a race) is completed here, by whichever
    /// instance looks first, as the file store finishes such an upload at its next start.
    func load(_ id: String) throws(UploadFailure) -> (record: UploadRecord, finished: Bool)? {
        guard let (upload, progress) = try store.load(id) else { return nil }
        runHookIfDue(upload)
        if upload.upload.phase == .receiving, upload.upload.kind != .plain, let length = upload.upload.length,
            progress.offset == length
        {
            do {
                try finish(upload.upload, replacing: overwrite)
                log?("upload /\(upload.upload.target.joined(separator: "/")) completed on S3 when next asked")
                return (upload.upload, true)
            } catch {
                return (upload.upload, false)
            }
        }
        return (upload.upload, upload.upload.phase == .finishing)
    }

    /// Drops every upload whose time ran out and whose lock is free (any instance may do it; the lock
    /// keeps it from dropping one being written). Blocks; returns the targets dropped.
    func sweepExpired(now: Int64) -> [String] {
        let ids: [String]
        do {
            ids = try store.recordIDs()
        } catch {
            // Never silent: an endpoint that refuses the listing would keep every expired upload.
            log?("the expiry sweep cannot list \(store.client.name)'s uploads: \(error.reason)")
            return []
        }
        var dropped: [String] = []
        for id in ids {
            guard let record = try? store.record(id) else { continue }
            // Kept until its hook has run, whose holder may have died.
            if record.upload.phase == .finishing && record.hook != nil {
                runHookIfDue(record)
                continue
            }
            guard record.upload.expires <= now else { continue }
            // Complete on S3 but never completed: completed now (``load(_:)`` does it), never aborted.
            if record.upload.phase == .receiving, record.upload.length != nil, let loaded = try? load(id),
                loaded.finished
            {
                continue
            }
            let held: S3Lock?
            do {
                held = try lock(id)
            } catch {
                continue
            }
            store.remove(record)
            held?.release()
            dropped.append("/" + record.upload.target.joined(separator: "/"))
        }
        return dropped
    }
}
