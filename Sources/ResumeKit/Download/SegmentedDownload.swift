import Dispatch
import Glibc

/// A download over several connections at once (`--connections N`): parallel ranged GETs with `If-Range`
/// into one `.part` file. Each segment's committed count is in the token (fdatasync first, then the token),
/// so a resume continues every segment where it stopped.
final class SegmentedDownload {
    /// Why the single-connection path should take over instead.
    enum Handover: Error, CustomStringConvertible {
        /// The server cannot serve parallel ranges; say so once.
        case unsupported(String)
        /// The file changed mid-way; start over from zero.
        case changed(String)
        /// The HEAD found no server: the one-connection path meets the same fault and answers it.
        case unreached

        var description: String {
            switch self {
            case .unsupported(let why), .changed(let why): why
            case .unreached: "no answer"
            }
        }
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
        var options = options
        // `resume` gives no --connections: the download goes on with as many as it began with.
        if options.connections <= 1, let connections = download.connections {
            options.connections = connections
            options.perMirror = download.perMirror ?? options.perMirror
        }
        self.options = options
        self.cancellation = cancellation
        self.emit = events
    }

    func run() throws -> DownloadResult {
        if download.segments == nil { try plan() }
        guard let total = download.totalBytes, let segments = download.segments else {
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
        let own = ResumeToken.Mirror(url: token.url, of: download)
        var schedule = SegmentSchedule(
            mirrors: download.mirrors ?? [own], segments: segments, connections: options.connections,
            perMirror: options.perMirror)
        // Whole segments a kill left unchecked against their pieces are checked before anything is fetched.
        if let pieces = download.pieces {
            for (i, s) in schedule.segments.enumerated() where s.isDone && s.verified != true {
                let bad = try pieces.failing(s.start...s.end, fd: fd, total: total, path: download.partPath)
                if bad.isEmpty { schedule.markVerified(i) } else { schedule.reset(i) }
            }
        }
        emit(.started(kind: .download, url: token.url, path: download.path, offset: download.heldBytes, total: total))
        while true {
            try fetchAll(&schedule, fd: fd, total: total)
            let hashed = options.computeSHA256 || download.expectedSHA256 != nil
            let digest = hashed ? try FileDigest.sha256(path: download.partPath) : nil
            // Bytes of several servers and a checksum that fails: fetch a suspect's share from the others.
            if let expected = download.expectedSHA256, digest != expected, let next = schedule.putOnTrial() {
                let url = Redact.url(schedule.mirrors[next].url)
                emit(.note("the file's sha256 does not match: fetching what \(url) sent from the other mirrors"))
                continue
            }
            if let suspect = schedule.suspect, digest == download.expectedSHA256 {
                schedule.drop(suspect, "sent bytes the file's checksum refutes", replacing: true)
                emit(
                    .warning(
                        .mirrorDropped(url: schedule.mirrors[suspect].url, reason: "its bytes failed the checksum")))
                try checkpoint(fd: fd, schedule: schedule, held: { schedule.segments[$0].committed })
            }
            return try finish(total: total, digest: digest)
        }
    }

    /// Runs connections over the schedule until every segment is whole: the one place that starts, stops and
    /// hears the end of each segment's ``SegmentWorker``, and commits (fdatasync, then token) as they go.
    private func fetchAll(_ schedule: inout SegmentSchedule, fd: Int32, total: Int64) throws {
        let ended = DispatchSemaphore(value: 0)
        let budget = RetryBudget.forSegments(options.retry, count: min(schedule.segments.count, options.connections))
        let mirrored = schedule.origins.count > 1
        var running: [Int: SegmentWorker] = [:]
        var written = schedule.segments.map(\.committed)
        func held(_ segment: Int) -> Int64 { running[segment]?.written ?? written[segment] }
        var failure: TransferError?
        var changed: String?
        var lastCheckpoint = Monotonic.now
        var pacer = ProgressPacer(bytes: written.reduce(0, +))
        let writeback = Committer()
        var kicked = written
        while true {
            let now = Monotonic.now
            for (i, worker) in running where worker.isFinished {
                running[i] = nil
                written[i] = worker.written
                if mirrored, let learned = worker.learned { schedule.adopt(worker.origin, learned) }
                let outcome = worker.outcome ?? .stopped
                if case .finished(let verified) = outcome {
                    schedule.ended(segment: i, held: written[i], verified: verified, now: now)
                    continue
                }
                schedule.ended(segment: i, held: written[i], now: now)
                switch outcome {
                case .finished, .stopped:
                    break
                case .corrupt(let why):
                    // Bytes of one mirror alone convict it; mixed ones are fetched again from one.
                    if schedule.segments[i].from == [worker.origin] {
                        drop(&schedule, worker.origin, why, running: running)
                    }
                    schedule.reset(i)
                    written[i] = 0
                case .changed(let why) where mirrored:
                    drop(&schedule, worker.origin, "the file changed there (\(why))", running: [:])
                case .changed(let why):
                    changed = changed ?? why
                case .failed(let error) where mirrored:
                    drop(&schedule, worker.origin, error.message, running: [:])
                case .failed(let error):
                    failure = failure ?? error
                }
            }
            if mirrored, schedule.live.isEmpty, failure == nil {
                let reasons = schedule.mirrors.map { "\($0.url): \($0.dropped ?? "")" }.joined(separator: "; ")
                failure = TransferError(.failed, "every mirror failed: \(reasons)")
            }
            let stopping = cancellation.isStopped || failure != nil || changed != nil
            if stopping { for worker in running.values { worker.stop.stop(cancellation.reason ?? .pause) } }
            if running.isEmpty, stopping || schedule.isDone { break }
            if !stopping {
                for action in schedule.next(now: now, held: held) {
                    switch action {
                    case .preempt(let segment):
                        running[segment]?.stop.stop(.pause)
                    case .start(let segment, let origin):
                        let worker = worker(
                            segment, origin: origin, schedule: schedule, fd: fd, total: total,
                            ended: ended, budget: budget)
                        running[segment] = worker
                        runOnBackgroundThread("segment") { worker.run() }
                    }
                }
            }
            _ = ended.wait(timeout: .now() + .milliseconds(50))  // a worker's end wakes it at once
            let bytes = schedule.segments.indices.reduce(0) { $0 + held($1) }
            if let rate = pacer.tick(bytes: bytes, now: Monotonic.now) {
                emit(.progress(bytes: bytes, total: total, rate: rate))
            }
            // As with one connection: the disk writes while data arrives, so the last fdatasync is short.
            let ranges = schedule.segments.indices.compactMap { i -> Range<Int64>? in
                let start = schedule.segments[i].start
                return held(i) > kicked[i] ? start + kicked[i]..<start + held(i) : nil
            }
            if ranges.reduce(0, { $0 + $1.count }) >= 8 << 20, writeback.startWriteback(fd: fd, ranges: ranges) {
                kicked = schedule.segments.indices.map(held)
            }
            if Monotonic.now - lastCheckpoint >= options.checkpointInterval {
                try checkpoint(fd: fd, schedule: schedule, held: held)
                lastCheckpoint = Monotonic.now
            }
        }
        try checkpoint(fd: fd, schedule: schedule, held: held)

        if let reason = cancellation.reason {
            let committed = download.heldBytes
            emit(.paused(offset: committed))
            throw TransferError.stopped(reason, "at \(committed) bytes", tokenID: token.id)
        }
        if let changed { throw Handover.changed(changed) }
        if let failure { throw TransferError(failure.code, failure.message, tokenID: token.id) }
    }

    /// A connection for one segment from one mirror, with what the token knows of that mirror. With several
    /// mirrors a segment gives up on its mirror sooner (three retries, within about 4 s): the others can take
    /// its bytes.
    private func worker(
        _ segment: Int, origin: Int, schedule: SegmentSchedule, fd: Int32, total: Int64, ended: DispatchSemaphore,
        budget: RetryBudget?
    ) -> SegmentWorker {
        let mirror = schedule.mirrors[origin]
        var options = options
        if schedule.live.count > 1 {
            options.retry.maxRetries = min(options.retry.maxRetries ?? 3, 3)
            options.retry.baseDelay = min(options.retry.baseDelay, 0.5)
        }
        return SegmentWorker(
            segment: segment, of: schedule.segments[segment], url: mirror.url, headers: token.headers,
            resource: mirror.validator.map {
                DownloadStateMachine.Resource(
                    etag: mirror.etag, lastModified: mirror.lastModified, validator: $0, totalBytes: total)
            },
            total: total, pieces: download.pieces, fd: fd, path: download.partPath, transport: transport,
            options: options, connections: options.connections, origin: origin, ended: ended,
            budget: schedule.live.count > 1 ? nil : budget)
    }

    /// Stops giving segments to a mirror, says so once, and stops its connections still running in `running`.
    private func drop(_ schedule: inout SegmentSchedule, _ origin: Int, _ why: String, running: [Int: SegmentWorker]) {
        guard schedule.mirrors[origin].dropped == nil else { return }
        schedule.drop(origin, why)
        emit(.warning(.mirrorDropped(url: schedule.mirrors[origin].url, reason: why)))
        for worker in running.values where worker.origin == origin { worker.stop.stop(.pause) }
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

    /// HEAD for the validator and length, then the segment layout, recorded in the token before any data. With
    /// mirrors, the first that answers sets the length; one that cannot is dropped.
    private func plan() throws {
        let urls = download.mirrors?.map(\.url) ?? [token.url]
        for (i, url) in urls.enumerated() {
            do {
                let (resource, effectiveURL) = try head(url)
                let total = resource.totalBytes!
                let unit =
                    download.pieces?.length ?? max(SegmentRules.minimumSegment, total / Int64(4 * options.connections))
                // Piece hashes are checked a segment at a time: segments hold whole pieces, however many URLs.
                let segments =
                    urls.count > 1 || download.pieces != nil
                    ? SegmentRules.split(total: total, runsOf: unit)
                    : SegmentRules.split(total: total, connections: options.connections)
                guard segments.count > 1 || urls.count > 1 else {
                    throw Handover.unsupported("the file is too small to split")
                }
                if let pieces = download.pieces, Int64(pieces.hashes.count) != (total + unit - 1) / unit {
                    throw TransferError(
                        .failed, "\(url) serves \(total) bytes; the \(pieces.hashes.count) piece hashes say otherwise",
                        tokenID: token.id)
                }
                download.adopt(resource, effectiveURL: effectiveURL)
                download.mirrors?[i].adopt(resource)
                download.segments = segments
                download.connections = options.connections
                download.perMirror = urls.count > 1 ? options.perMirror : nil
                return
            } catch  where i < urls.count - 1 {
                download.mirrors?[i].dropped = "\(error)"
                emit(.warning(.mirrorDropped(url: url, reason: "\(error)")))
            }
        }
    }

    /// The HEAD of one URL: a resource that allows parallel ranges, or why not. A busy server (503, 429 … with
    /// Retry-After) is waited out as on every path.
    private func head(_ url: String) throws -> (DownloadStateMachine.Resource, String?) {
        let headers = (try? HeaderLines.forDownload(token.headers)) ?? [:]
        let id = token.id
        let probe: RangeProbe = try Retrier.run(
            options, cancellation: cancellation, events: emit, fresh: { true },
            stopped: "stopped before the download began",
            explain: {
                var error = $0; error.tokenID = id; return error
            }
        ) { () throws(TransferError) -> Retrier.Attempt<RangeProbe> in
            let probe = RangeProbe.ask(
                url, headers: headers, session: transport.makeSession(), settings: options.transport,
                cancellation: cancellation)
            if case .fault(let fault) = probe, fault.status != nil { return .failed(fault) }
            return .done(probe)
        }
        switch probe {
        case .fault(let fault) where fault.isNetworkDown: throw Handover.unreached
        case .fault: throw Handover.unsupported("the server did not answer HEAD")
        case .refused(let head, .status(let status)): throw TransferError.refused(status, head.reason, url: url)
        case .refused(_, let refusal): throw Handover.unsupported(refusal.description)
        case .resource(let resource, let effectiveURL): return (resource, effectiveURL)
        }
    }

    /// Everything written before the fdatasync is durable after it; only that goes into the token.
    private func checkpoint(fd: Int32, schedule: SegmentSchedule, held: (Int) -> Int64) throws {
        var segments = schedule.segments
        for i in segments.indices { segments[i].committed = held(i) }
        guard fdatasync(fd) == 0 else {
            throw TransferError(
                .localIO, "cannot write \(download.partPath): \(String(cString: strerror(errno)))", tokenID: token.id)
        }
        download.segments = segments
        if download.mirrors != nil { download.mirrors = schedule.mirrors }
        try store.write(token, keeping: true)
    }

    private func finish(total: Int64, digest: String?) throws -> DownloadResult {
        // The token already holds every segment's committed bytes: it stays as it is on a mismatch.
        let finished = Publish.Finished(
            download: download, tokenID: token.id, url: token.url, tokenOnDisk: true, bytes: total, sha256: digest,
            emit: emit)
        try Publish.verify(finished) {}
        return try Publish.place(finished, store: store)
    }
}
