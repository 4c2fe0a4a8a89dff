import FoundationEssentials
import Glibc
import SystemPackage

/// Runs one download to its end on the calling thread: asks the state machine what to send, moves the
/// body into the `.part` file, commits (fsync, then token) as it goes, retries, and finally verifies and
/// renames. Data is always on disk before the token records it.
final class DownloadOperation: ExchangeDelegate {
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
    private var machine: DownloadStateMachine
    private var part: PartFile!
    /// Set when a list's publisher owns the `.part` file from here on.
    private let batch: BatchPublisher.Slot?
    private var handedOver = false

    // State of the exchange in flight.
    private var requestedOffset: Int64 = 0
    private var decision: DownloadStateMachine.Decision?
    private var localError: String?
    private var receivedThisAttempt: Int64 = 0
    /// A resume's overlap: the bytes on disk that the first bytes of the body must equal before anything is
    /// written, and the URL the answer came from.
    private var overlap = OverlapCheck.none
    private var overlapURL = ""
    private var started = false
    /// A short download never writes a token: it ends before its first checkpoint is due.
    private var tokenOnDisk: Bool
    /// The token is written before `started`: the caller shows the id with the events (see `accept`).
    private let tokenBeforeStart: Bool
    /// How an exchange made for this download before it began ended (a list's first pass): its first attempt.
    private var earlier: DownloadStateMachine.Verdict?

    // Hashing of the data in the `.part` file, from byte 0 up to `hashedUpTo`.
    private let wantsHash: Bool
    private var hasher: MessageDigest?
    private var hashedUpTo: Int64 = 0

    // Pacing of checkpoints and progress events.
    private let committer = Committer()
    private var lastCheckpoint = Monotonic.now
    private var lastWriteback: Int64 = 0
    private var pacer = ProgressPacer()

    init(
        token: ResumeToken, lock: TokenGuard, store: TokenStore, session: any TransportSession, options: TransferOptions,
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
        let resource = d.totalBytes == nil && d.validator == nil && d.etag == nil ? nil
            : DownloadStateMachine.Resource(etag: d.etag, lastModified: d.lastModified, validator: d.validator,
                totalBytes: d.totalBytes)
        machine = DownloadStateMachine(resource: resource, onChange: onChange)
        wantsHash = options.computeSHA256 || d.expectedSHA256 != nil
        self.tokenOnDisk = tokenOnDisk ?? store.exists(id: token.id)
        tokenBeforeStart = batch == nil && options.announcesID
        self.earlier = earlier?.verdict
        started = earlier?.announced ?? false
    }

    func run() throws(TransferError) -> DownloadResult {
        do {
            return try runAttempts()
        } catch {
            // A failure nothing can resume leaves no empty `.part` or token behind.
            if error.tokenID == nil, let part, part.length == 0 {
                unlink(part.path)
                store.remove(id: token.id)
            }
            throw error
        }
    }

    private func runAttempts() throws(TransferError) -> DownloadResult {
        do {
            let claim = try OutputLocks.shared(store.state)?.claim(download.path)
            part = try PartFile(path: download.partPath, keeping: download.committedBytes, claim: claim)
        } catch let busy as PartFile.Busy {
            throw busy.refusal
        } catch {
            throw TransferError(.cannotCreateOutput, "cannot open \(download.partPath): \(error)")
        }
        defer {
            committer.waitIdle()  // a checkpoint in flight still uses the descriptor
            if !handedOver { part.close() }
        }
        // A single download whose events name its id (`--json`) writes its token before the first of them
        // (`started` once the server's head is accepted, or a retry, a pause, a restart), so that an announced
        // id always resumes; written then, it already holds the validator and length. Until then the `.part`'s
        // lock and the lock file keep a second process out, and the same command continues. One whose id is
        // shown only by a failure or a pause, and a list's file, wait for the first checkpoint or that stop
        // (each commits first): most small files end before it, and the same command (or the list) is what
        // continues them after a kill.
        if part.committed < download.committedBytes {
            emit(.note("\(download.partPath) holds \(part.committed) of \(download.committedBytes) recorded bytes; continuing from \(part.committed)"))
            try commit()
        }
        // A resume asks the URL the user gave again: a signed redirect target may have expired.
        let url = token.url
        // A typo'd host on a fresh start fails at once; a known host that stops resolving is the network.
        return try Retrier.run(options, cancellation: cancellation, events: emit, fresh: { RetryRules.isFresh(held: part.committed, known: machine.resource != nil) }, stopped: "", explain: explain, restart: restartFromZero) { () throws(TransferError) in
            if let reason = cancellation.reason { throw try stop(reason) }
            let verdict: DownloadStateMachine.Verdict
            if let earlier {
                // Settled like an exchange of its own: a refusal fails, a fault is counted and waited for.
                verdict = earlier
                self.earlier = nil
            } else {
                switch machine.plan(committed: part.committed) {
                case .fail(let failure):
                    throw fail(failure)
                case .fetch(let offset, let rangeHeaders):
                    verdict = try fetch(url: url, offset: offset, rangeHeaders: rangeHeaders)
                }
            }
            switch verdict {
            case .done:
                return .done(try finish())
            case .refetchFromZero(let reason):
                return .restart(reason)
            case .again:
                return .next
            case .fail(let failure):
                throw fail(failure)
            case .fault(let fault):
                if case .fatal = fault {} else { try commit() }
                return .failed(fault, progressMade: receivedThisAttempt > 0)
            }
        }
    }

    /// The attempt loop's giving up, told with the token: kept when retries ran out or bytes are committed.
    private func explain(_ error: TransferError) throws(TransferError) -> TransferError {
        switch error.code {
        case .stopped(let reason): return try stop(reason)
        case .retriesExhausted: return TransferError(.retriesExhausted, error.message, tokenID: token.id)
        default: return TransferError(error.code, error.message, status: error.status, tokenID: part.committed > 0 ? token.id : nil)
        }
    }

    // MARK: Attempts

    private func fetch(url: String, offset: Int64, rangeHeaders: HeaderFields) throws(TransferError) -> DownloadStateMachine.Verdict {
        var headers = (try? HeaderLines.forDownload(token.headers)) ?? [:]
        for field in rangeHeaders.fields { headers.set(field.name, field.value) }
        requestedOffset = offset
        decision = nil
        localError = nil
        receivedThisAttempt = 0
        let request = TransferRequest(method: "GET", url: url, headers: headers, followRedirects: true)
        let result = session.perform(request, settings: options.transport, cancellation: cancellation, delegate: self)
        if let url = result.effectiveURL, url != download.effectiveURL { download.effectiveURL = url }

        if let localError, result.outcome == .completed || result.outcome == .abortedByDelegate {
            try? commit()
            throw TransferError(.localIO, localError, tokenID: token.id)
        }
        return machine.verdict(result.outcome, decision, held: part.length, stallTimeout: options.transport.stallTimeout)
    }

    // MARK: ExchangeDelegate

    func exchange(head: ResponseHead, effectiveURL: String) -> Bool {
        let d = machine.evaluate(head, requestedOffset: requestedOffset)
        decision = d
        overlap = .none
        guard case .write(let from, let restarted) = d else { return false }
        if restarted == nil, from == requestedOffset, from < part.length {
            // A resume: the body starts with bytes we hold. Compare them before accepting anything.
            do {
                let count = Int(part.length - from)
                var held = [UInt8](repeating: 0, count: count)
                let read = try held.withUnsafeMutableBytes { try part.read(at: from, into: $0) }
                guard read == count else { throw Errno.ioError }
                overlap = OverlapCheck(held: held, from: from)
                overlapURL = effectiveURL
                return true
            } catch {
                localError = "cannot read \(part.path): \(error)"
                return false
            }
        }
        return accept(from: from, restarted: restarted, effectiveURL: effectiveURL)
    }

    /// Takes the body from `from` on: the `.part` is cut there, the token learns the resource, `started` is said.
    private func accept(from: Int64, restarted: String?, effectiveURL: String) -> Bool {
        do {
            if from < part.length { try part.truncate(to: from) }
            // Blocks reserved up front are cheaper to fill than blocks found as the writes come (1 GiB
            // download, three farm-bench runs of 9–11 pairs: wall 0.94–0.97, CPU 0.90–0.94); the
            // length stays what was written.
            if from == 0, let total = machine.resource?.totalBytes, total > PartFile.gatherAfter {
                _ = reserveSpaceAhead(part.fileDescriptor, length: total)
            }
            if from < hashedUpTo { hasher = nil; hashedUpTo = 0 }
            if let restarted { emit(.restarted(reason: restarted)) }
            download.adopt(machine.resource, effectiveURL: effectiveURL)
            // On disk: the stored validator or offset may be stale now. Not yet: `started` names the id next.
            if tokenOnDisk || tokenBeforeStart { try commit() }
            // Hash as the body arrives when it starts at zero; a resumed file is hashed whole at the end,
            // so its first new byte does not wait for the data already on disk to be read back.
            if from == 0, wantsHash || download.expectedSHA256 != nil {
                hasher = MessageDigest(.sha256)
                hashedUpTo = 0
            }
        } catch {
            localError = "\(error)"
            return false
        }
        if !started {
            started = true
            emit(.started(kind: .download, url: token.url, path: download.path, offset: from, total: download.totalBytes))
        }
        lastCheckpoint = Monotonic.now
        return true
    }

    /// Compares the body's first bytes with the overlap; returns the rest of the body, or nil when they
    /// differ (then `decision` says the file changed and the transfer is aborted).
    private func checkOverlap(_ body: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        guard !overlap.isComplete else { return body }
        switch overlap.consume(body) {
        case .differs(let offset):
            overlap = .none
            decision = machine.overlapDiffers(at: offset)
            return nil
        case .matched(let rest):
            guard overlap.isComplete else { return rest }
            // The bytes agree: now the response continues exactly where the data on disk ends.
            overlap = .none
            decision = .write(from: part.length, restarted: nil)
            return accept(from: part.length, restarted: nil, effectiveURL: overlapURL) ? rest : nil
        }
    }

    func exchange(body received: UnsafeRawBufferPointer) -> Bool {
        guard let body = checkOverlap(received) else { return false }
        guard !body.isEmpty else { return true }
        do {
            if hasher != nil, hashedUpTo == part.length {
                hasher!.update(bufferPointer: body)
                hashedUpTo += Int64(body.count)
            }
            try part.append(body)
            receivedThisAttempt += Int64(body.count)
            let now = Monotonic.now
            if part.written - lastWriteback >= 8 << 20 {
                if committer.startWriteback(fd: part.fileDescriptor, ranges: [lastWriteback..<part.written]) {
                    lastWriteback = part.written
                }
            }
            if now - lastCheckpoint >= options.checkpointInterval {
                try checkpointInBackground()
                lastCheckpoint = now
            }
            reportProgress(now)
        } catch let error as TransferError {
            localError = error.message
            return false
        } catch {
            localError = "writing \(part.path) failed: \(error)"
            return false
        }
        return true
    }

    func exchange(progressReceived received: Int64, sent: Int64) -> Bool {
        reportProgress(Monotonic.now)
        return true
    }

    private func reportProgress(_ now: Double) {
        // Events that name the id wait for its token (a list's say null until then).
        guard tokenOnDisk || !tokenBeforeStart, let rate = pacer.tick(bytes: part.length, now: now) else { return }
        emit(.progress(bytes: part.length, total: download.totalBytes, rate: rate))
    }

    // MARK: Commit, hash, finish

    /// Hands a checkpoint of everything written so far to the committer.
    private func checkpointInBackground() throws(TransferError) {
        if let error = committer.error { throw TransferError(.localIO, error, tokenID: tokenOnDisk ? token.id : nil) }
        if !tokenOnDisk { try lock.hold() }
        try flushPart()
        var committed = download
        committed.committedBytes = part.length
        let snapshot = header.with(.download(committed))
        let store = self.store
        if committer.checkpoint(fd: part.fileDescriptor, path: part.path, length: part.length, record: { [snapshot] in try store.save(snapshot) }) {
            tokenOnDisk = true
        }
    }

    /// fsync the data, then record it in the token: never the other way round.
    private func commit() throws(TransferError) {
        committer.waitIdle()
        if let error = committer.error { throw TransferError(.localIO, error, tokenID: tokenOnDisk ? token.id : nil) }
        do { try part.sync() } catch {
            throw TransferError(.localIO, "cannot write \(part.path): \(error)", tokenID: token.id)
        }
        download.committedBytes = part.committed
        try lock.hold()
        try store.write(token, keeping: true)
        tokenOnDisk = true
    }

    /// Writes what the `.part` file still gathers, before its descriptor is used elsewhere.
    private func flushPart() throws(TransferError) {
        do { try part.flush() } catch {
            throw TransferError(.localIO, "writing \(part.path) failed: \(error)", tokenID: tokenOnDisk ? token.id : nil)
        }
    }

    private func syncData() throws(TransferError) {
        committer.waitIdle()
        do { try part.sync() } catch {
            throw TransferError(.localIO, "cannot write \(part.path): \(error)", tokenID: tokenOnDisk ? token.id : nil)
        }
    }

    private func restartFromZero(_ reason: String) throws(TransferError) {
        do { try part.truncate(to: 0) } catch {
            throw TransferError(.localIO, "cannot truncate \(part.path): \(error)", tokenID: token.id)
        }
        hasher = nil
        hashedUpTo = 0
        try commit()  // before the event that names the id
        emit(.restarted(reason: reason))
    }

    /// Brings the hash up to the end of the data already in the `.part` file (after a resume).
    private func catchUpHash() throws {
        if hasher == nil {
            hasher = MessageDigest(.sha256)
            hashedUpTo = 0
        }
        guard hashedUpTo < part.length else { return }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 << 10, alignment: 16)  // as fast as 1 MiB, a quarter of the pages
        defer { buffer.deallocate() }
        while hashedUpTo < part.length {
            let n = try part.read(at: hashedUpTo, into: buffer)
            if n <= 0 { throw TransferError(.localIO, "\(part.path) is shorter than expected", tokenID: token.id) }
            let take = Int(min(Int64(n), part.length - hashedUpTo))
            hasher!.update(bufferPointer: UnsafeRawBufferPointer(rebasing: buffer[0..<take]))
            hashedUpTo += Int64(take)
        }
    }

    private func finish() throws(TransferError) -> DownloadResult {
        var digest: String?
        if wantsHash || download.expectedSHA256 != nil {
            do { try catchUpHash() } catch {
                throw TransferError(.localIO, "cannot read \(part.path): \(error)", tokenID: tokenOnDisk ? token.id : nil)
            }
            digest = hasher?.finalize().hex
        }
        try flushPart()
        let finished = Publish.Finished(
            download: download, tokenID: token.id, url: token.url, tokenOnDisk: tokenOnDisk, bytes: part.length, sha256: digest, emit: emit)
        try Publish.verify(finished) { () throws(TransferError) in try commit() }
        if let batch, !tokenOnDisk {
            // A list's small file: the batch makes it durable together with others, then renames it; beside
            // another program's backlog the worker syncs it alone, at the same time as the other workers.
            committer.waitIdle()
            let synced = batch.syncsAlone
            if synced { try syncData() }
            batch.submit(finished, part: part, synced: synced)
            handedOver = true
            return finished.result
        }
        try syncData()
        return try Publish.place(finished, store: store)
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
