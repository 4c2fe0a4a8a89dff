import FoundationEssentials
import Glibc

/// The library's entry point: downloads, uploads and resumes, each run on a thread of its own.
///
/// ```swift
/// let client = TransferClient(store: TokenStore(directory: TokenStore.defaultDirectory()))
/// let result = try await client.download(DownloadRequest(url: "https://example.com/big.iso"))
/// ```
/// A failure is a ``TransferError``; when it carries a `tokenID`, ``resume(_:newURL:headers:cancellation:events:)``
/// continues where it stopped.
public struct TransferClient: Sendable {
    public var store: TokenStore
    public var transport: any HTTPTransport
    public var options: TransferOptions
    /// Reads S3's XML answers; nil in a program that does no S3 transfers (see ``S3Answers``).
    public var s3Answers: (any S3Answers)?
    /// A folder upload's requests in flight, shared by all its files (nil: no limit beyond each file's own).
    var requestBudget: RequestBudget?

    public init(
        store: TokenStore, transport: any HTTPTransport = CurlTransport(), options: TransferOptions = .init(),
        s3Answers: (any S3Answers)? = nil
    ) {
        self.store = store
        self.transport = transport
        self.options = options
        self.s3Answers = s3Answers
    }

    /// Downloads `request.url`, resuming this URL's earlier attempt to the same path when there is one.
    public func download(
        _ request: DownloadRequest, cancellation: Cancellation = Cancellation(), events: @escaping EventHandler = { _ in }
    ) async throws(TransferError) -> DownloadResult {
        try await onOwnThread { () throws(TransferError) in try self.downloadBlocking(request, cancellation: cancellation, events: events) }
    }

    /// ``download(_:cancellation:events:)`` on the calling thread, which it blocks until the download ends: for a
    /// caller with nothing else to do meanwhile (a hop to Swift's thread pool and back costs a small download
    /// more than its bytes).
    public func downloadBlocking(
        _ request: DownloadRequest, cancellation: Cancellation = Cancellation(), events: @escaping EventHandler = { _ in }
    ) throws(TransferError) -> DownloadResult {
        if request.outputPath == "-" { return try runStreamDownload(request, cancellation: cancellation, events: events) }
        try prepareStateDirectory()
        return try recorded(id: downloadTokenID(request), kind: .download, url: request.url, { () throws(TransferError) in
            try self.runDownload(request, cancellation: cancellation, events: events)
        }, as: TransferResult.downloaded)
    }

    /// Continues the transfer a token describes.
    /// - Parameters:
    ///   - reference: a token id or token file path.
    ///   - newURL: for downloads, a replacement URL (e.g. a fresh signed link); it is accepted only if it
    ///     serves the same representation (same validator and length).
    ///   - headers: request headers for this run (credentials are used, never stored).
    ///   - cancellation: stops the transfer (pause or interrupt), which then commits.
    ///   - events: progress, retries and notes, on the transfer's thread.
    public func resume(
        _ reference: String, newURL: String? = nil, headers: [String] = [], cancellation: Cancellation = Cancellation(),
        events: @escaping EventHandler = { _ in }
    ) async throws(TransferError) -> TransferResult {
        try await onOwnThread { () throws(TransferError) in
            let token: ResumeToken
            do throws(TransferError) {
                token = try self.loadToken(reference)
            } catch {
                guard error.code == .inputMissing, let ended = try self.endedResult(reference, events: events) else { throw error }
                return ended
            }
            if let batch = token.upload?.batch {
                throw TransferError(.usage, "\(token.id) is a file of folder upload \(batch): resume \(batch) continues it")
            }
            return try self.recorded(id: token.id, kind: token.kind, url: token.url, failedURL: newURL, { () throws(TransferError) in
                switch token.kind {
                case .download:
                    .downloaded(try self.runResumeDownload(token, newURL: newURL, headers: headers, cancellation: cancellation, events: events))
                case .upload:
                    .uploaded(try self.runResumeUpload(token, newURL: newURL, headers: headers, cancellation: cancellation, events: events))
                }
            }, as: { $0 })
        }
    }

    /// `-o -`: the body to stdout, resumed within this run from the count of bytes written; no token.
    func runStreamDownload(_ request: DownloadRequest, cancellation: Cancellation, events: @escaping EventHandler) throws(TransferError) -> DownloadResult {
        var request = request
        var options = self.options
        if Route.isS3(request.url) {
            let (plain, state) = try s3Object(request)
            request = plain
            options.transport = try S3Target(state).signing(options.transport)
        }
        try URLCheck.validate(request.url)
        let headers = try HeaderLines.forDownload(request.headers)
        options.transport.credentialOrigin = request.url
        let operation = StreamDownload(
            url: request.url, headers: headers, output: STDOUT_FILENO, session: transport.makeSession(), options: options,
            expectedSHA256: request.expectedSHA256, cancellation: cancellation, events: events)
        return try operation.run()
    }

    /// Reads a token, mapping store errors to the documented exit statuses.
    public func loadToken(_ reference: String) throws(TransferError) -> ResumeToken {
        try store.loadChecked(reference)
    }

    /// The token id a download request uses, or nil when its URL or output path is unusable.
    public func downloadTokenID(_ request: DownloadRequest) -> String? {
        if Route.isS3(request.url) { return (try? s3Object(request)).flatMap { downloadTokenID($0.0) } }
        guard let path = try? OutputPath.resolve(url: request.url, output: request.outputPath) else { return nil }
        return TokenStore.makeID(kind: .download, url: request.url, path: path)
    }

    // MARK: Downloads

    /// - Parameter batch: a list's publisher, which takes over small files once their data is complete.
    /// - Parameter earlier: what a list's first pass left of the file (see SmallFilePass).
    func runDownload(
        _ request: DownloadRequest, session: (any TransportSession)? = nil, batch: BatchPublisher.Slot? = nil,
        earlier: EarlierAttempt? = nil, cancellation: Cancellation, events: @escaping EventHandler
    ) throws(TransferError) -> DownloadResult {
        // `pause` finds a transfer by its lock file. Only a list's files, most of which end before their
        // first checkpoint, take it lazily, with their token (see TokenGuard).
        let (opening, lock) = try openDownload(request, holdLock: batch == nil)
        defer { lock.release() }
        var token: ResumeToken
        var isNew = false
        switch opening {
        case .fileThere(let path):
            return try alreadyThere(path, expected: request.expectedSHA256, events: events)
        case .token(let found, isNew: true):
            // A single download writes its token as soon as it holds the `.part` file's lock, before any
            // request or event (see DownloadOperation, SegmentedDownload).
            token = found
            isNew = true
        case .token(let existing, isNew: false):
            var part = try existing.downloadPart()
            if let sum = request.expectedSHA256 { part.expectedSHA256 = sum.lowercased() }
            token = existing.with(.download(part))
            let stored = ResumeToken.storableHeaders(request.headers)
            if !stored.isEmpty { token.headers = HeaderLines.merge(stored: token.headers, given: stored) }
        }
        return try runDownloadOperation(
            token, lock: lock, extraHeaders: request.headers, onChange: request.onChange, session: session, batch: batch,
            isNew: isNew, earlier: isNew ? earlier : nil, cancellation: cancellation, events: events)
    }

    func runResumeDownload(
        _ stored: ResumeToken, newURL: String?, headers: [String], cancellation: Cancellation, events: @escaping EventHandler
    ) throws(TransferError) -> DownloadResult {
        _ = try stored.downloadPart()
        let (opened, lock) = try openResume(stored, events: events)
        defer { lock.release() }
        var token = opened
        var onChange = DownloadStateMachine.OnChange(rawValue: try token.downloadPart().onChange ?? "") ?? .restart
        if let newURL {
            try URLCheck.validate(newURL)
            token.url = newURL
            onChange = .fail  // a replacement URL must serve the very same bytes
        }
        do {
            return try runDownloadOperation(token, lock: lock, extraHeaders: headers, onChange: onChange, cancellation: cancellation, events: events)
        } catch where newURL != nil && error.code == .changed {
            // The token keeps the URL it had: the replacement serves something else.
            if var onDisk = try? store.load(stored.id), onDisk.url != stored.url {
                onDisk.url = stored.url
                try? store.save(onDisk)
            }
            let reason = error.cause ?? error.message
            throw TransferError(.changed, "refusing \(newURL!): it does not serve the file this transfer began with (\(reason)); resume without --url continues from \(stored.url)",
                tokenID: stored.id)
        }
    }

    /// Runs a download's token, signed for S3: in segments when it has or wants several connections, else on one.
    private func runDownloadOperation(
        _ token: ResumeToken, lock: TokenGuard, extraHeaders: [String], onChange: DownloadStateMachine.OnChange,
        session: (any TransportSession)? = nil, batch: BatchPublisher.Slot? = nil, isNew: Bool = false,
        earlier: EarlierAttempt? = nil, cancellation: Cancellation, events: @escaping EventHandler
    ) throws(TransferError) -> DownloadResult {
        var token = token
        // A new token is on disk only once written, by the operation or by a segmented attempt below.
        var tokenOnDisk: Bool? = isNew ? false : nil
        let options = try signingS3(connectionOptions(for: &token, given: extraHeaders, events: events), for: token)
        do throws(TransferError) {
            let download = try token.downloadPart()
            let fresh = download.committedBytes == 0 && download.totalBytes == nil
            if download.segments != nil || (options.connections > 1 && fresh) {
                try lock.hold()  // the segment plan is written before any data
                tokenOnDisk = nil
                // All segments share one network thread: on a fast link more receiving threads than cores only contend.
                let ending = try withSessionPool { pool throws(TransferError) in
                    try SegmentedDownload.run(token, store: store, transport: pool, options: options, onChange: onChange,
                        cancellation: cancellation, events: events)
                }
                switch ending {
                case .finished(let result): return result
                case .oneConnection(let next): token = next
                }
            }
            let operation = try DownloadOperation(
                token: token, lock: lock, store: store, session: session ?? transport.makeSession(), options: options, onChange: onChange,
                batch: batch, tokenOnDisk: tokenOnDisk, earlier: earlier, cancellation: cancellation, events: events)
            return try operation.run()
        } catch {
            throw explainingLogin(explainingS3(error, token: token, options: options))
        }
    }

    private func alreadyThere(_ path: String, expected: String?, events: EventHandler) throws(TransferError) -> DownloadResult {
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int64) ?? 0
        var digest: String?
        if let expected {
            digest = try FileDigest.sha256(path: path)
            guard digest == expected.lowercased() else {
                throw TransferError(.checksumMismatch, "\(path) exists but its sha256 is \(digest ?? "?"), not \(expected); use --force to download again")
            }
        }
        events(.note("\(path) is already there; nothing fetched (use --force to download again)"))
        events(.completed(location: path, bytes: size, sha256: digest))
        return DownloadResult(path: path, bytes: size, sha256: digest)
    }

    /// Fails at once when tokens cannot be written, rather than at a download's first checkpoint.
    func prepareStateDirectory() throws(TransferError) {
        do { try store.ensureDirectory() } catch { throw TransferError(.localIO, "\(error)") }
        _ = store.removeLeftovers()
        results.pruneOnce()
    }

    /// The lock of a token that exists (or is written at once, as an upload's is).
    func takeLock(_ id: String) throws(TransferError) -> TokenGuard {
        let lock = TokenGuard(store: store, id: id)
        try lock.hold()
        return lock
    }
}

/// Runs blocking work on a thread of its own, never on Swift's cooperative pool.
func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws(TransferError) -> T) async throws(TransferError) -> T {
    let result: Result<T, TransferError> = await withCheckedContinuation { continuation in
        runOnBackgroundThread("transfer") {
            do throws(TransferError) {
                continuation.resume(returning: .success(try body()))
            } catch {
                continuation.resume(returning: .failure(error))
            }
        }
    }
    return try result.get()
}
