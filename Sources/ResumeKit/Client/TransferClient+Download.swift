import FoundationEssentials
import Glibc

/// Downloads: one file (its `.part`, its segments), stdout, a list, an S3 object or prefix; each the one fetch.
extension TransferClient {
    /// `-o -`: the body to stdout, resumed within this run from the count of bytes written; no token.
    func runStreamDownload(_ request: DownloadRequest, cancellation: Cancellation, events: @escaping EventHandler)
        throws(TransferError) -> DownloadResult
    {
        guard case .opened(let opened) = try open(.download(request), events: events) else {
            throw TransferError(.usage, "stdout is no file")
        }
        return try StreamDownload(
            url: opened.token.url, headers: try HeaderLines.forDownload(opened.token.headers), output: STDOUT_FILENO,
            session: transport.makeSession(), options: opened.options, expectedSHA256: request.expectedSHA256,
            cancellation: cancellation, events: events
        ).run()
    }

    /// - Parameter batch: a list's publisher, which takes over small files once their data is complete.
    /// - Parameter earlier: what a list's first pass left of the file (see SmallFilePass).
    func runDownload(
        _ request: DownloadRequest, session: (any TransportSession)? = nil, batch: BatchPublisher.Slot? = nil,
        earlier: EarlierAttempt? = nil, cancellation: Cancellation, events: @escaping EventHandler
    ) throws(TransferError) -> DownloadResult {
        switch try open(.download(request, list: batch.map { _ in .worker }), events: events) {
        case .fileThere(let path):
            return try alreadyThere(path, expected: request.expectedSHA256, events: events)
        case .notFresh:
            preconditionFailure("only a list's first pass opens fresh files alone")
        case .opened(let opened):
            defer { opened.lock.release() }
            return try runDownloadOperation(
                opened, onChange: request.onChange, session: session, batch: batch,
                earlier: opened.isNew ? earlier : nil, cancellation: cancellation, events: events)
        }
    }

    /// Continues a download ``TransferClient/resume(_:newURL:headers:cancellation:events:)`` opened; `stored`, its
    /// token as named.
    func runResumeDownload(
        _ opened: Opened, stored: ResumeToken, newURL: String?, cancellation: Cancellation,
        events: @escaping EventHandler
    ) throws(TransferError) -> DownloadResult {
        // A replacement URL must serve the very same bytes.
        let onChange =
            newURL != nil
            ? .fail
            : DownloadStateMachine.OnChange(rawValue: try opened.token.downloadPart().onChange ?? "") ?? .restart
        do {
            return try runDownloadOperation(opened, onChange: onChange, cancellation: cancellation, events: events)
        } catch  where newURL != nil && error.code == .changed {
            // The token keeps the URL it had: the replacement serves something else.
            if var onDisk = try? store.load(stored.id), onDisk.url != stored.url {
                onDisk.url = stored.url
                try? store.save(onDisk)
            }
            let reason = error.cause ?? error.message
            throw TransferError(
                .changed,
                "refusing \(newURL!): it does not serve the file this transfer began with (\(reason)); resume without "
                    + "--url continues from \(stored.url)",
                tokenID: stored.id)
        }
    }

    /// Runs an opened download: in segments when it has or wants several connections, else on one.
    private func runDownloadOperation(
        _ opened: Opened, onChange: DownloadStateMachine.OnChange, session: (any TransportSession)? = nil,
        batch: BatchPublisher.Slot? = nil, earlier: EarlierAttempt? = nil, cancellation: Cancellation,
        events: @escaping EventHandler
    ) throws(TransferError) -> DownloadResult {
        var token = opened.token
        let options = opened.options
        // A new token is on disk only once written, by the operation or by a segmented attempt below.
        var tokenOnDisk: Bool? = opened.isNew ? false : nil
        do throws(TransferError) {
            let download = try token.downloadPart()
            let fresh = download.committedBytes == 0 && download.totalBytes == nil
            if download.segments != nil || download.mirrors != nil || (options.connections > 1 && fresh) {
                try opened.lock.hold()  // the segment plan is written before any data
                tokenOnDisk = nil
                // All segments share one network thread: on a fast link more receiving threads than cores only contend.
                let ending = try withSessionPool { pool throws(TransferError) in
                    try SegmentedDownload.run(
                        token, store: store, transport: pool, options: options, onChange: onChange,
                        cancellation: cancellation, events: events)
                }
                switch ending {
                case .finished(let result): return result
                case .oneConnection(let next): token = next
                }
            }
            return try DownloadOperation(
                token: token, lock: opened.lock, store: store, session: session ?? transport.makeSession(),
                options: options,
                onChange: onChange, batch: batch, tokenOnDisk: tokenOnDisk, earlier: earlier,
                cancellation: cancellation, events: events
            ).run()
        } catch {
            throw explainingLogin(explainingS3(error, token: token, options: options))
        }
    }

    private func alreadyThere(_ path: String, expected: String?, events: EventHandler) throws(TransferError)
        -> DownloadResult
    {
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int64) ?? 0
        var digest: String?
        if let expected {
            digest = try FileDigest.sha256(path: path)
            guard digest == expected.lowercased() else {
                throw TransferError(
                    .checksumMismatch,
                    "\(path) exists but its sha256 is \(digest ?? "?"), not \(expected); use --force to download again")
            }
        }
        events(.note("\(path) is already there; nothing fetched (use --force to download again)"))
        events(.completed(location: path, bytes: size, sha256: digest))
        return DownloadResult(path: path, bytes: size, sha256: digest)
    }

    /// Downloads every file under a folder URL (an HTTP listing) or an S3 prefix into a folder, as one batch
    /// (``FolderDownload``); the same request again continues it.
    public func downloadFolder(
        _ request: FolderRequest, cancellation: Cancellation = Cancellation(),
        events: @escaping @Sendable (BatchEvent) -> Void = { _ in }
    ) async throws(TransferError) -> BatchSummary {
        try await FolderDownload(client: self, request: request).run(cancellation: cancellation, events: events)
    }

    /// Downloads many files, `parallel` at a time, each resumable on its own token. With libcurl they run on a
    /// multi handle per lane (a network thread and connection cache each). Fresh small files are fetched first,
    /// on the lanes' threads alone (SmallFilePass); every other file gets a worker thread.
    /// - Returns: one result per request, in order; a failure of one file does not stop the others.
    public func downloadAll(
        _ requests: [DownloadRequest], parallel: Int, cancellation: Cancellation = Cancellation(),
        events: @escaping @Sendable (Int, TransferEvent) -> Void = { _, _ in }
    ) async -> [Result<DownloadResult, TransferError>] {
        do throws(TransferError) {
            try prepareStateDirectory()
        } catch {
            return requests.map { _ in .failure(error) }
        }
        let queue = WorkQueue<Result<DownloadResult, TransferError>>(count: requests.count)
        let workers = max(1, min(parallel, requests.count))
        let publisher = BatchPublisher(store: store)
        // One network thread carried every small file's exchange and callbacks, busy 85% of a 1,000-file list
        // at 8 at a time while the rest of the machine waited: a lane per core, at least 4 workers to a lane.
        let lanes = min(Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))), workers / 4)
        let earlier = await withSessionPool(lanes: lanes) { pools in
            var earlier: [Int: EarlierAttempt] = [:]
            // Not with several connections a file: a fresh file then plans segments.
            if options.connections <= 1, pools.allSatisfy({ $0 is CurlTransport }) {
                let pass = SmallFilePass(
                    client: self, requests: requests, queue: queue, publisher: publisher,
                    cancellation: cancellation, events: events)
                let left =
                    (try? await onOwnThread { () throws(TransferError) in
                        pass.run(
                            on: (0..<workers).compactMap {
                                (pools[$0 % pools.count] as? CurlTransport)?.makeStartingSession()
                            })
                    }) ?? []
                queue.putBack(left.map(\.index))
                for file in left { earlier[file.index] = file.earlier }
            }
            if !queue.isDrained {
                await runWorkers(
                    workers, on: pools, requests, queue: queue, publisher: publisher, earlier: earlier,
                    cancellation: cancellation, events: events)
            }
            return earlier
        }
        let unpublished = publisher.finish()
        let reason = cancellation.reason ?? .interrupt
        return queue.results.enumerated().map { i, result in
            if let failure = unpublished[i] { return .failure(failure) }
            if let result { return result }
            // Stopped in the pass: it had no token yet, and its `.part` is gone.
            let began = earlier[i]?.announced == true
            return .failure(
                TransferError(
                    .stopped(reason),
                    began ? "stopped before its first checkpoint; the list's next run fetches it again" : "not started")
            )
        }
    }

    /// Runs whatever the queue still holds, a file at a time on each of `count` worker threads.
    private func runWorkers(
        _ count: Int, on pools: [any HTTPTransport], _ requests: [DownloadRequest],
        queue: WorkQueue<Result<DownloadResult, TransferError>>, publisher: BatchPublisher,
        earlier: [Int: EarlierAttempt], cancellation: Cancellation,
        events: @escaping @Sendable (Int, TransferEvent) -> Void
    ) async {
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<count {
                let transport = pools[worker % pools.count]
                group.addTask {
                    _ = try? await onOwnThread { () throws(TransferError) in
                        let session = transport.makeSession()
                        while !cancellation.isStopped, let i = queue.take() {
                            queue.finish(
                                i,
                                Result { () throws(TransferError) in
                                    try self.runDownload(
                                        requests[i], session: session, batch: publisher.slot(i),
                                        earlier: earlier[i], cancellation: cancellation
                                    ) { events(i, $0) }
                                })
                        }
                    }
                }
            }
        }
    }

    // MARK: S3

    /// The XML reader S3 calls need, as the program passed it in.
    func requireS3Answers() throws(TransferError) -> any S3Answers {
        guard let s3Answers else {
            throw TransferError(.failed, "this program was built without an XML reader for S3's answers")
        }
        return s3Answers
    }

    /// An `s3://BUCKET/KEY` download as the signed HTTP download it is: the object's URL on its endpoint,
    /// and what the token keeps to sign again on resume.
    func s3Object(_ request: DownloadRequest) throws(TransferError) -> (DownloadRequest, ResumeToken.S3State) {
        let location = try S3Location.parse(request.url)
        guard !location.isPrefix else {
            throw TransferError(.usage, "\(request.url) is a prefix: give -o DIR to download every object under it")
        }
        let target = try S3Target(location, choices: request.s3.choices, forcePathStyle: request.s3.forcePathStyle)
        var plain = request
        plain.url = target.url()
        return (plain, target.state)
    }

    /// Signs every request of a download whose token names an S3 object.
    func signingS3(_ options: TransferOptions, for token: ResumeToken) throws(TransferError) -> TransferOptions {
        guard let s3 = token.s3 else { return options }
        var signed = options
        signed.transport = try S3Target(s3).signing(options.transport)
        return signed
    }

    /// A download S3 refused says why in S3's words (`NoSuchKey`, `AccessDenied` …): the error body of one
    /// more signed request, read only after the refusal (the download path keeps no bodies of errors).
    func explainingS3(_ error: TransferError, token: ResumeToken, options: TransferOptions) -> TransferError {
        guard let s3 = token.s3, error.code == .failed, let status = error.status, (400..<500).contains(status),
            let answers = s3Answers
        else {
            return error
        }
        let call = S3Call(answers: answers, settings: options.transport)
        let reply = call.send(
            transport.makeSession(), method: "GET", url: token.url, headers: ["Range": "bytes=0-0"],
            cancellation: Cancellation())
        guard case .refused(_, let body?, _) = reply else { return error }
        var explained = error
        explained.message = "\(s3.address): \(body.line)"
        return explained
    }
}
