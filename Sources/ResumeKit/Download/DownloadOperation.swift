import FoundationEssentials
import Glibc
import SystemPackage

/// A download into a `.part` file, run to its end on the calling thread: a ``Fetch`` whose output is the
/// `.part`, committed (fsync, then token) as it goes, retried, and finally verified and renamed. Data is
/// always on disk before the token records it.
final class DownloadOperation: FetchOutput {
    /// The token but for its download state, which is `download`.
    private let header: ResumeToken
    private var download: ResumeToken.DownloadPart
    private var token: ResumeToken { header.with(.download(download)) }
    private let lock: TokenGuard
    private let store: TokenStore
    private let session: any TransportSession
    private let options: TransferOptions
    private let cancellation: Cancellation
    private let emit: EventHandler
    private var fetch: Fetch!
    private var part: PartFile!
    /// Set when a list's publisher owns the `.part` file from here on.
    private let batch: BatchPublisher.Slot?
    private var handedOver = false
    /// A short download never writes a token: it ends before its first checkpoint is due.
    private var tokenOnDisk: Bool
    /// The token is written before `started`: the caller shows the id with the events (see `begin`).
    private let tokenBeforeStart: Bool
    /// How an exchange made for this download before it began ended (a list's first pass): its first attempt.
    private var earlier: DownloadStateMachine.Verdict?

    // Pacing of checkpoints.
    private let committer = Committer()
    private var lastCheckpoint = Monotonic.now
    private var lastWriteback: Int64 = 0

    init(
        token: ResumeToken, lock: TokenGuard, store: TokenStore, session: any TransportSession,
        options: TransferOptions,
        onChange: DownloadStateMachine.OnChange, batch: BatchPublisher.Slot? = nil, tokenOnDisk: Bool? = nil,
        earlier: EarlierAttempt? = nil, cancellation: Cancellation, events: @escaping EventHandler
    ) throws(TransferError) {
        header = token
        let d = try token.downloadPart()
        download = d
        self.batch = batch
        self.lock = lock
        self.store = store
        self.session = session
        self.options = options
        self.cancellation = cancellation
        self.emit = events
        let resource =
            d.totalBytes == nil && d.validator == nil && d.etag == nil
            ? nil
            : DownloadStateMachine.Resource(
                etag: d.etag, lastModified: d.lastModified, validator: d.validator,
                totalBytes: d.totalBytes)
        self.tokenOnDisk = tokenOnDisk ?? store.exists(id: token.id)
        tokenBeforeStart = batch == nil && options.announcesID
        self.earlier = earlier?.verdict
        let headers = (try? HeaderLines.forDownload(token.headers)) ?? [:]
        // A resume asks the URL the user gave again: a signed redirect target may have expired.
        fetch = Fetch(
            url: token.url, headers: headers, output: self, resource: resource, onChange: onChange,
            hashes: options.computeSHA256 || d.expectedSHA256 != nil, stallTimeout: options.transport.stallTimeout,
            path: d.path, announced: earlier?.announced ?? false, events: events)
    }

    func run() throws(TransferError) -> DownloadResult {
        part = try PartFile.opening(download.partPath, keeping: download.committedBytes)
        do {
            defer {
                committer.waitIdle()  // a checkpoint in flight still uses the descriptor
                if !handedOver { part.close() }
            }
            // A download whose events name its id (`--json`) writes its token before the first of them, so that an
            // announced id always resumes (written then, it holds the validator and length). Others, and a list's
            // files, wait for the first checkpoint or a stop: most small files end before it, and the same command
            // (or the list) continues them after a kill. Meanwhile the `.part`'s lock keeps a second process out.
            if part.committed < download.committedBytes {
                emit(
                    .note(
                        "\(download.partPath) holds \(part.committed) of \(download.committedBytes) recorded bytes; "
                            + "continuing from \(part.committed)"
                    ))
                try commit()
            }
            // A typo'd host on a fresh start fails at once; a known host that stops resolving is the network.
            return try Retrier.run(
                options, cancellation: cancellation, events: emit,
                fresh: { RetryRules.isFresh(held: part.committed, known: fetch.machine.resource != nil) }, stopped: "",
                explain: explain, restart: restartFromZero
            ) { () throws(TransferError) in
                if let reason = cancellation.reason { throw try stop(reason) }
                // A list's first pass counts as an exchange: a refusal fails, a fault is counted and waited for.
                let verdict = if let earlier { earlier } else { try attempt() }
                earlier = nil
                // What arrived before a fault is kept before the wait; a fatal one ends the download anyway.
                if case .fault(let fault) = verdict {
                    if case .fatal = fault {} else { try commit() }
                }
                return try fetch.step(verdict, finish: finish) { failure, restarts throws(TransferError) in
                    if restarts, case .changed(let reason) = failure { return .restart(reason) }
                    throw fail(failure)
                }
            }
        } catch {
            // A failure nothing can resume leaves no empty `.part` or token behind.
            if error.tokenID == nil, part.length == 0 {
                unlink(part.path)
                store.remove(id: token.id)
            }
            throw error
        }
    }

    /// One exchange of the fetch; a local failure (a write, a commit) ends the download with the token kept.
    private func attempt() throws(TransferError) -> DownloadStateMachine.Verdict {
        let request: TransferRequest
        do { request = try fetch.request() } catch { throw fail(error) }
        do {
            let verdict = try fetch.perform(
                request, on: session, settings: options.transport, cancellation: cancellation)
            if let url = fetch.effectiveURL, url != download.effectiveURL { download.effectiveURL = url }
            return verdict
        } catch {
            try? commit()
            throw TransferError(error.code, error.message, tokenID: token.id)
        }
    }

    /// The attempt loop's giving up, told with the token: kept when retries ran out or bytes are committed.
    private func explain(_ error: TransferError) throws(TransferError) -> TransferError {
        switch error.code {
        case .stopped(let reason): return try stop(reason)
        case .retriesExhausted: return TransferError(.retriesExhausted, error.message, tokenID: token.id)
        default:
            return TransferError(
                error.code, error.message, status: error.status, tokenID: part.committed > 0 ? token.id : nil)
        }
    }

    // MARK: FetchOutput

    var held: Int64 { part.length }

    func heldBytes(from offset: Int64) throws(TransferError) -> [UInt8] {
        let count = Int(part.length - offset)
        var bytes = [UInt8](repeating: 0, count: count)
        do {
            let read = try bytes.withUnsafeMutableBytes { try part.read(at: offset, into: $0) }
            guard read == count else { throw Errno.ioError }
        } catch {
            throw localIO("read", error, keep: false)
        }
        return bytes
    }

    /// Takes the body from `from` on: the `.part` is cut there, the token learns the resource.
    func begin(at from: Int64, restarted: String?, machine: DownloadStateMachine, effectiveURL: String)
        throws(TransferError)
    {
        do { if from < part.length { try part.truncate(to: from) } } catch {
            throw localIO("truncate", error, keep: false)
        }
        // Blocks reserved up front are cheaper to fill than blocks found as the writes come (1 GiB, three
        // paired runs of 9–11 pairs: wall 0.94–0.97, CPU 0.90–0.94); the length stays what was written.
        if from == 0, let total = machine.resource?.totalBytes, total > PartFile.gatherAfter {
            _ = reserveSpaceAhead(part.fileDescriptor, length: total)
        }
        if let restarted { emit(.restarted(reason: restarted)) }
        download.adopt(machine.resource, effectiveURL: effectiveURL)
        // On disk: the stored validator or offset may be stale now. Not yet: `started` names the id next.
        if tokenOnDisk || tokenBeforeStart { try commit() }
        lastCheckpoint = Monotonic.now
    }

    func write(_ body: UnsafeRawBufferPointer) throws(TransferError) {
        do { try part.append(body) } catch { throw localIO("write", error, keep: false) }
        if part.written - lastWriteback >= 8 << 20 {
            if committer.startWriteback(fd: part.fileDescriptor, ranges: [lastWriteback..<part.written]) {
                lastWriteback = part.written
            }
        }
        let now = Monotonic.now
        if now - lastCheckpoint >= options.checkpointInterval {
            try checkpointInBackground()
            lastCheckpoint = now
        }
    }

    func read(at offset: Int64, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        try part.read(at: offset, into: buffer)
    }

    // MARK: Commit, hash, finish

    private func checkpointInBackground() throws(TransferError) {
        if let error = committer.error { throw TransferError(.localIO, error, tokenID: tokenOnDisk ? token.id : nil) }
        if !tokenOnDisk { try lock.hold() }
        do { try part.flush() } catch { throw localIO("write", error) }  // before another thread syncs the descriptor
        var committed = download
        committed.committedBytes = part.length
        let snapshot = header.with(.download(committed))
        let store = self.store
        if committer.checkpoint(
            fd: part.fileDescriptor, path: part.path, record: { [snapshot] in try store.save(snapshot) })
        {
            tokenOnDisk = true
        }
    }

    /// fsync the data, then record it in the token: never the other way round.
    private func commit() throws(TransferError) {
        committer.waitIdle()
        if let error = committer.error { throw TransferError(.localIO, error, tokenID: tokenOnDisk ? token.id : nil) }
        do { try part.sync() } catch { throw localIO("write", error) }
        download.committedBytes = part.committed
        try lock.hold()
        try store.write(token, keeping: true)
        tokenOnDisk = true
    }

    private func restartFromZero(_ reason: String) throws(TransferError) {
        do { try part.truncate(to: 0) } catch { throw localIO("truncate", error) }
        try commit()  // before the event that names the id
        emit(.restarted(reason: reason))
    }

    private func finish() throws(TransferError) -> DownloadResult {
        var digest: String?
        if options.computeSHA256 || download.expectedSHA256 != nil {
            do { digest = try fetch.digest() } catch { throw localIO("read", error) }
        }
        do { try part.flush() } catch { throw localIO("write", error) }  // a list's publisher syncs the descriptor
        let finished = Publish.Finished(
            download: download, tokenID: token.id, url: token.url, tokenOnDisk: tokenOnDisk, bytes: part.length,
            sha256: digest, emit: emit)
        try Publish.verify(finished) { () throws(TransferError) in try commit() }
        committer.waitIdle()
        // A list's small file: the batch syncs it with others (or has it synced here) and renames it.
        let batch = tokenOnDisk ? nil : self.batch
        let synced = batch?.syncsAlone ?? true
        if synced { do { try part.sync() } catch { throw localIO("write", error) } }
        guard let batch else { return try Publish.place(finished, store: store) }
        batch.submit(finished, part: part, synced: synced)
        handedOver = true
        return finished.result
    }

    /// "cannot `verb` the `.part`", naming the token when `keep` and it is on disk: an id with no token
    /// behind it cannot be resumed.
    private func localIO(_ verb: String, _ error: any Error, keep: Bool = true) -> TransferError {
        TransferError(.localIO, "cannot \(verb) \(part.path): \(error)", tokenID: keep && tokenOnDisk ? token.id : nil)
    }

    private func stop(_ reason: StopReason) throws(TransferError) -> TransferError {
        try commit()
        emit(.paused(offset: part.committed))
        return .stopped(reason, "at \(part.committed) bytes", tokenID: token.id)
    }

    private func fail(_ failure: DownloadStateMachine.Failure) -> TransferError {
        switch failure {
        case .status(let status, let reason):
            return .refused(status, reason, url: token.url, tokenID: part.committed > 0 ? token.id : nil)
        case .changed(let reason):
            return TransferError.changed(reason, tokenID: token.id)
        }
    }
}
