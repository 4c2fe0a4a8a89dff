import Dispatch
import Glibc

/// A download over several connections at once (`--connections N`): parallel ranged GETs with `If-Range`
/// into one `.part` file. Each segment's committed count is in the token (fdatasync first, then the token),
/// so a resume continues every segment where it stopped.
final class SegmentedDownload {
    /// Why the single-connection path should take over instead.
    enum Handover: Error {
        /// The server cannot serve parallel ranges; say so once.
        case unsupported(String)
        /// The file changed mid-way; start over from zero.
        case changed(String)
        /// The HEAD found no server: the one-connection path meets the same fault and answers it.
        case unreached
    }

    /// The token but for its download state, which is `download`.
    private let header: ResumeToken
    private var download: ResumeToken.DownloadPart
    private var token: ResumeToken { header.with(.download(download)) }
    private let store: TokenStore
    private let transport: any HTTPTransport
    private let options: TransferOptions
    private let cancellation: Cancellation
    private let emit: EventHandler

    init(
        token: ResumeToken, store: TokenStore, transport: any HTTPTransport, options: TransferOptions,
        cancellation: Cancellation,
        events: @escaping EventHandler
    ) throws(TransferError) {
        header = token
        download = try token.downloadPart()
        self.store = store
        self.transport = transport
        self.options = options
        self.cancellation = cancellation
        self.emit = events
    }

    func run() throws -> DownloadResult {
        if download.segments == nil { try plan() }
        let resource = DownloadStateMachine.Resource(
            etag: download.etag, lastModified: download.lastModified, validator: download.validator,
            totalBytes: download.totalBytes)
        guard let total = resource.totalBytes, let segments = download.segments else {
            throw Handover.unsupported("no segment plan")
        }
        // The `.part`'s lock first: a process it refuses (a list's file there) must leave no token behind. Every
        // segment's bytes stay: the token says which are committed.
        let part = try PartFile.opening(
            download.partPath, keeping: .max, tokenID: store.exists(id: token.id) ? token.id : nil)
        defer { part.close() }
        let fd = part.fileDescriptor
        // the plan, before any data: whatever fails next, a resume knows the segments
        try store.write(token, keeping: true)
        // Holes where nothing is committed yet; a longer file (garbage after a crash) is cut back. Reserved up front,
        // segments write into allocated space instead of interleaving their allocations (unthrottled 1 GiB, 4
        // connections: 0.93 of one connection's time instead of 1.15), and a disk too small fails now.
        if reserveSpace(fd, length: total) != 0, errno == ENOSPC {
            throw TransferError(
                .localIO, "not enough free space for \(total) bytes in \(Paths.parent(of: download.partPath))",
                tokenID: token.id)
        }
        guard ftruncate(fd, off_t(total)) == 0 else {
            throw TransferError(
                .localIO, "cannot size \(download.partPath): \(String(cString: strerror(errno)))", tokenID: token.id)
        }

        let stop = Cancellation()
        let ended = DispatchSemaphore(value: 0)
        let budget = RetryBudget.forSegments(options.retry, count: segments.count)
        let workers = segments.map { segment in
            SegmentWorker(
                segment: segment, url: token.url, headers: token.headers, resource: resource, fd: fd,
                path: download.partPath,
                transport: transport, options: options, connections: segments.count, stop: stop, ended: ended,
                budget: budget)
        }
        emit(
            .started(
                kind: .download, url: token.url, path: download.path,
                offset: segments.reduce(0) { $0 + $1.committed }, total: total))
        for worker in workers where !worker.isDone {
            runOnBackgroundThread("segment") { worker.run() }
        }

        var lastCheckpoint = Monotonic.now
        var pacer = ProgressPacer(bytes: workers.reduce(0) { $0 + $1.written })
        var outcome: SegmentWorker.Outcome?
        let writeback = Committer()
        var kicked = workers.map(\.written)
        while true {
            if let reason = cancellation.reason { stop.stop(reason) }
            let finished = workers.allSatisfy(\.isFinished)
            if outcome == nil, let bad = workers.compactMap(\.failure).first {
                outcome = bad
                stop.stop(.pause)
            }
            if finished { break }
            _ = ended.wait(timeout: .now() + .milliseconds(50))  // a worker's end wakes it at once
            let now = Monotonic.now
            let bytes = workers.reduce(0) { $0 + $1.written }
            if let rate = pacer.tick(bytes: bytes, now: now) { emit(.progress(bytes: bytes, total: total, rate: rate)) }
            // As with one connection: the disk writes while data arrives, so the last fdatasync is short.
            if bytes - kicked.reduce(0, +) >= 8 << 20 {
                let written = workers.map(\.written)
                let ranges = workers.indices.map { workers[$0].start + kicked[$0]..<workers[$0].start + written[$0] }
                if writeback.startWriteback(fd: fd, ranges: ranges) { kicked = written }
            }
            if now - lastCheckpoint >= options.checkpointInterval {
                try checkpoint(fd: fd, workers: workers)
                lastCheckpoint = now
            }
        }
        try checkpoint(fd: fd, workers: workers)

        if let reason = cancellation.reason {
            let committed = download.heldBytes
            emit(.paused(offset: committed))
            throw TransferError.stopped(reason, "at \(committed) bytes", tokenID: token.id)
        }
        if case .changed(let reason)? = outcome { throw Handover.changed(reason) }
        if case .failed(let error)? = outcome { throw TransferError(error.code, error.message, tokenID: token.id) }
        return try finish(total: total)
    }

    /// How a segmented download ended: finished, or handed to one connection with the token to go on from.
    enum Ending {
        case finished(DownloadResult)
        case oneConnection(ResumeToken)
    }

    /// Runs `token` in segments, or decides (the one place that does) that one connection takes over: see
    /// ``Handover``; a changed file starts over from zero, unless changes fail.
    static func run(
        _ token: ResumeToken, store: TokenStore, transport: any HTTPTransport, options: TransferOptions,
        onChange: DownloadStateMachine.OnChange, cancellation: Cancellation, events: @escaping EventHandler
    ) throws(TransferError) -> Ending {
        do {
            return .finished(
                try SegmentedDownload(
                    token: token, store: store, transport: transport, options: options,
                    cancellation: cancellation, events: events
                ).run())
        } catch let error as TransferError {
            throw error
        } catch Handover.unsupported(let why) {
            events(.note("\(why); using one connection"))
            return .oneConnection(token)
        } catch Handover.unreached {
            return .oneConnection(token)
        } catch Handover.changed(let why) {
            if onChange == .fail { throw TransferError.changed(why, tokenID: token.id) }
            events(.restarted(reason: why))
            let download = try token.downloadPart()
            let fresh = token.with(
                .download(
                    .init(
                        path: download.path, committedBytes: 0,
                        expectedSHA256: download.expectedSHA256, onChange: download.onChange, s3: download.s3)))
            _ = truncate(download.partPath, 0)
            try store.write(fresh, keeping: true)
            return .oneConnection(fresh)
        } catch {
            throw TransferError(.localIO, "\(error)", tokenID: token.id)
        }
    }

    /// HEAD for the validator and length, then the segment layout, recorded in the token before any data.
    private func plan() throws {
        let headers = (try? HeaderLines.forDownload(token.headers)) ?? [:]
        let unreached = { (result: ExchangeResult) in
            Fault.of(result.outcome, stallSeconds: self.options.transport.stallTimeout)?.isNetworkDown == true
        }
        let id = token.id
        let result: ExchangeResult = try Retrier.run(
            options, cancellation: cancellation, events: emit, fresh: { true },
            stopped: "stopped before the download began",
            explain: {
                var error = $0; error.tokenID = id; return error
            }
        ) { () throws(TransferError) -> Retrier.Attempt<ExchangeResult> in
            let result = transport.makeSession().headOnly(
                TransferRequest(method: "HEAD", url: token.url, headers: headers, followRedirects: true),
                settings: options.transport, cancellation: cancellation)
            // A busy server (503, 429 … with Retry-After) is waited out as on every path, then split.
            if !unreached(result), let busy = result.head, RetryPolicy.isRetryable(status: busy.status) {
                return .failed(.answered(busy.status, retryAfter: busy.headers["Retry-After"]))
            }
            return .done(result)
        }
        if unreached(result) { throw Handover.unreached }
        guard result.outcome == .completed, let head = result.head else {
            throw Handover.unsupported("the server did not answer HEAD")
        }
        switch SegmentRules.probe(head) {
        case .failure(let refusal):
            if case .status(let status) = refusal, !RetryPolicy.isRetryable(status: status) {
                throw TransferError.refused(status, head.reason, url: token.url)
            }
            throw Handover.unsupported(refusal.description)
        case .success(let resource):
            let segments = SegmentRules.split(total: resource.totalBytes!, connections: options.connections)
            guard segments.count > 1 else { throw Handover.unsupported("the file is too small to split") }
            download.adopt(resource, effectiveURL: result.effectiveURL)
            download.segments = segments
        }
    }

    /// Everything written before the fdatasync is durable after it; only that goes into the token.
    private func checkpoint(fd: Int32, workers: [SegmentWorker]) throws {
        let written = workers.map(\.written)
        guard fdatasync(fd) == 0 else {
            throw TransferError(
                .localIO, "cannot write \(download.partPath): \(String(cString: strerror(errno)))", tokenID: token.id)
        }
        for (i, bytes) in written.enumerated() { download.segments?[i].committed = bytes }
        try store.write(token, keeping: true)
    }

    private func finish(total: Int64) throws -> DownloadResult {
        let hashed = options.computeSHA256 || download.expectedSHA256 != nil
        let digest = hashed ? try FileDigest.sha256(path: download.partPath) : nil
        // The token already holds every segment's committed bytes: it stays as it is on a mismatch.
        let finished = Publish.Finished(
            download: download, tokenID: token.id, url: token.url, tokenOnDisk: true, bytes: total, sha256: digest,
            emit: emit)
        try Publish.verify(finished) {}
        return try Publish.place(finished, store: store)
    }
}
