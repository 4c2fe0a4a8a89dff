import NIOCore
import NIOPosix
import Synchronization

/// The uploads the server holds, by id: each one's record as last made durable, and which request is
/// appending to it. Shared by every connection; the durable truth is in the ``UploadBackend``. With a
/// shared store (S3, ``UploadRemote``) an entry is only a cache: it is read back before every answer,
/// since another instance may have moved the upload on; the claim here keeps this process's requests
/// apart, the store's lock keeps the instances apart.
///
/// An upload belongs to the login that created it (`record.user`; none without `--htpasswd`): to any other
/// caller it is ``Claim/missing`` — no hint that it exists, and its writer is left alone.
final class UploadTable: Sendable {
    /// The request appending to an upload right now.
    struct Writer: Sendable {
        /// Ends that request (closes its connection) so that a newer one can take the upload over.
        let stop: @Sendable () -> Void
        /// Succeeds once that request has settled: its bytes durable, the record saved, the upload free.
        let settled: EventLoopFuture<Void>
    }

    /// An upload as a request sees it.
    struct Entry: Sendable {
        var record: UploadRecord
        var writer: Writer?
        var holdsSlot = false
        /// Completed: kept until `record.expires` only to answer a client whose last answer was lost.
        var finished = false
    }

    enum Claim {
        case claimed(UploadRecord)
        /// Another request is appending: stop it, wait for it to settle, and ask again.
        case busy(Writer)
        case finished(UploadRecord)
        case missing
        /// The shared store could not be read, and this process knows nothing of the upload: not gone,
        /// only not to be reached now (the client hears 503 and comes back).
        case unavailable(UploadFailure)
    }

    private let entries = Mutex<[String: Entry]>([:])
    private let slots: UploadSlots?
    private let remote: (any UploadRemote)?
    private let threadPool: NIOThreadPool?

    init(slots: UploadSlots?, remote: (any UploadRemote)? = nil, threadPool: NIOThreadPool? = nil) {
        self.slots = slots
        self.remote = remote
        self.threadPool = threadPool
    }

    /// Reads the upload back from the shared store, unless a request of this process is writing it,
    /// then runs `next` on `eventLoop` (at once without a shared store). A store that cannot be read
    /// leaves the entry as it was (the sink finds out again, under the lock); for an upload this process
    /// has no entry of, `next` gets the failure.
    func refresh(_ id: String, on eventLoop: any EventLoop, _ next: @escaping (UploadFailure?) -> Void) {
        guard let remote, let threadPool, lookup(id)?.writer == nil else { return next(nil) }
        threadPool.runIfActive(eventLoop: eventLoop) { try remote.load(id) }.assumeIsolated().whenComplete { result in
            switch result {
            case .success(let loaded):
                self.adopt(id, loaded)
                next(nil)
            case .failure(let error):
                next(self.lookup(id) == nil ? UploadFailure(error) : nil)
            }
        }
    }

    /// Takes what the shared store holds; an upload gone from it, or completed there (by another
    /// instance, perhaps), gives its `--max-uploads` slot back.
    private func adopt(_ id: String, _ loaded: (record: UploadRecord, finished: Bool)?) {
        let freed = entries.withLock { entries -> Bool in
            guard entries[id]?.writer == nil else { return false }
            guard let loaded else { return entries.removeValue(forKey: id)?.holdsSlot == true }
            var entry = entries[id] ?? Entry(record: loaded.record)
            let freed = entry.holdsSlot && loaded.finished
            entry.record = loaded.record
            entry.finished = loaded.finished
            entry.holdsSlot = entry.holdsSlot && !loaded.finished
            entries[id] = entry
            return freed
        }
        if freed { slots?.release() }
    }

    /// ``claim(_:owner:writer:)`` on the upload as the shared store holds it now; `next` runs on `eventLoop`.
    func claim(
        _ id: String, owner: String?, writer: Writer, on eventLoop: any EventLoop, _ next: @escaping (Claim) -> Void
    ) {
        refresh(id, on: eventLoop) { failure in
            next(failure.map(Claim.unavailable) ?? self.claim(id, owner: owner, writer: writer))
        }
    }

    /// Adds an upload: a new one (its creation holds a slot of `--max-uploads`) or one found at start
    /// (`finished`: only its URL is left, answering until it expires).
    func insert(_ record: UploadRecord, writer: Writer? = nil, holdsSlot: Bool = false, finished: Bool = false) {
        entries.withLock {
            $0[record.id] = Entry(record: record, writer: writer, holdsSlot: holdsSlot, finished: finished)
        }
    }

    func lookup(_ id: String) -> Entry? {
        entries.withLock { $0[id] }
    }

    /// Makes `writer` the upload's only writer, unless another one is or `owner` is not the upload's.
    func claim(_ id: String, owner: String?, writer: Writer) -> Claim {
        entries.withLock { entries in
            guard var entry = entries[id], entry.record.user == owner else { return .missing }
            if entry.finished { return .finished(entry.record) }
            if let current = entry.writer { return .busy(current) }
            entry.writer = writer
            entries[id] = entry
            return .claimed(entry.record)
        }
    }

    /// Records what was made durable; with `releasing`, the writer is done.
    func update(_ record: UploadRecord, releasing: Bool) {
        entries.withLock { entries in
            guard var entry = entries[record.id] else { return }
            entry.record = record
            if releasing { entry.writer = nil }
            entries[record.id] = entry
        }
    }

    /// The upload is complete and placed: its slot goes back, and it answers as complete until `expires`.
    func finish(_ record: UploadRecord) {
        let freed = entries.withLock { entries -> Bool in
            guard var entry = entries[record.id] else { return false }
            defer {
                entry.holdsSlot = false
                entries[record.id] = entry
            }
            entry.record = record
            entry.writer = nil
            entry.finished = true
            return entry.holdsSlot
        }
        if freed { slots?.release() }
    }

    /// Forgets an upload (cancelled, failed for good); its slot goes back.
    @discardableResult
    func remove(_ id: String) -> Entry? {
        let entry = entries.withLock { $0.removeValue(forKey: id) }
        if entry?.holdsSlot == true { slots?.release() }
        return entry
    }

    /// Takes the uploads whose time ran out and that no request is writing; their slots go back.
    func takeExpired(now: Int64) -> [Entry] {
        let expired = entries.withLock { entries in
            let expired = entries.values.filter { $0.writer == nil && $0.record.expires <= now }
            for entry in expired { entries[entry.record.id] = nil }
            return expired
        }
        for entry in expired where entry.holdsSlot { slots?.release() }
        return expired
    }

    /// Unfinished uploads by protocol, for the metrics.
    func inProgress() -> [UploadRecord.Kind: Int] {
        entries.withLock { entries in
            entries.values.reduce(into: [:]) { counts, entry in
                if !entry.finished { counts[entry.record.kind, default: 0] += 1 }
            }
        }
    }

    /// When every request appending now has settled (its bytes durable): the graceful stop waits for it.
    func allSettled(on eventLoop: any EventLoop) -> EventLoopFuture<Void> {
        let writers = entries.withLock { $0.values.compactMap(\.writer) }
        return EventLoopFuture.andAllComplete(writers.map(\.settled), on: eventLoop)
    }

    /// The ids of the plain uploads in progress (nothing can continue them after a shutdown).
    func plainIDs() -> [String] {
        entries.withLock { $0.values.filter { $0.record.kind == .plain }.map(\.record.id) }
    }

    /// The uploads `ids` as the store holds them now, each `nil` when unknown or not `owner`'s, without
    /// stopping any writer (tus concatenation reads its partial uploads so); `next` runs on `eventLoop`.
    func entries(
        _ ids: ArraySlice<String>, owner: String?, found: [Entry?] = [], on eventLoop: any EventLoop,
        _ next: @escaping (Result<[Entry?], UploadFailure>) -> Void
    ) {
        guard let id = ids.first else { return next(.success(found)) }
        refresh(id, on: eventLoop) { failure in
            if let failure { return next(.failure(failure)) }
            let entry = self.lookup(id).flatMap { $0.record.user == owner ? $0 : nil }
            self.entries(ids.dropFirst(), owner: owner, found: found + [entry], on: eventLoop, next)
        }
    }

    /// Runs `next` on `eventLoop` once `writer` has been stopped and has settled.
    static func afterStopping(_ writer: Writer, on eventLoop: any EventLoop, _ next: @escaping () -> Void) {
        writer.stop()
        writer.settled.hop(to: eventLoop).assumeIsolated().whenComplete { _ in next() }
    }

    /// Runs `next` on `eventLoop` with the upload `id` (`nil`: unknown, or not `owner`'s) once no request
    /// writes to it: one still writing is stopped first and waited for, so its bytes count before anyone
    /// answers. With a shared store the upload is read back first (a failure to read it: see
    /// ``refresh(_:on:_:)``).
    func whenIdle(
        _ id: String, owner: String?, on eventLoop: any EventLoop,
        _ next: @escaping (Result<Entry?, UploadFailure>) -> Void
    ) {
        refresh(id, on: eventLoop) { failure in
            if let failure { return next(.failure(failure)) }
            guard let entry = self.lookup(id), entry.record.user == owner else { return next(.success(nil)) }
            guard let writer = entry.writer else { return next(.success(entry)) }
            Self.afterStopping(writer, on: eventLoop) { self.whenIdle(id, owner: owner, on: eventLoop, next) }
        }
    }
}
