import Dispatch
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
    /// Reads HTML folder listings; nil in a program that reads only JSON ones (see ``HTMLLinkReader``).
    public var htmlLinks: (any HTMLLinkReader)?
    /// A folder upload's requests in flight, shared by all its files (nil: no limit beyond each file's own).
    var requestBudget: RequestBudget?

    public init(
        store: TokenStore, transport: any HTTPTransport = CurlTransport(), options: TransferOptions = .init(),
        s3Answers: (any S3Answers)? = nil, htmlLinks: (any HTMLLinkReader)? = nil
    ) {
        self.store = store
        self.transport = transport
        self.options = options
        self.s3Answers = s3Answers
        self.htmlLinks = htmlLinks
    }

    /// Downloads `request.url`, resuming this URL's earlier attempt to the same path when there is one.
    public func download(
        _ request: DownloadRequest, cancellation: Cancellation = Cancellation(),
        events: @escaping EventHandler = { _ in }
    ) async throws(TransferError) -> DownloadResult {
        try await onOwnThread { () throws(TransferError) in
            try self.downloadBlocking(request, cancellation: cancellation, events: events)
        }
    }

    /// ``download(_:cancellation:events:)`` blocking the calling thread: a hop to Swift's thread pool and back
    /// costs a small download more than its bytes.
    public func downloadBlocking(
        _ request: DownloadRequest, cancellation: Cancellation = Cancellation(),
        events: @escaping EventHandler = { _ in }
    ) throws(TransferError) -> DownloadResult {
        if request.outputPath == "-" {
            return try runStreamDownload(request, cancellation: cancellation, events: events)
        }
        return try recorded(
            id: downloadTokenID(request), kind: .download, url: request.url,
            { () throws(TransferError) in
                try self.runDownload(request, cancellation: cancellation, events: events)
            }, as: TransferResult.downloaded)
    }

    /// Continues the transfer a token describes.
    /// - Parameters:
    ///   - reference: a token id or token file path.
    ///   - newURL: for downloads, a replacement URL (e.g. a fresh signed link), accepted only if it serves the
    ///     same representation (same validator and length).
    ///   - headers: request headers for this run (credentials are used, never stored).
    public func resume(
        _ reference: String, newURL: String? = nil, headers: [String] = [], cancellation: Cancellation = Cancellation(),
        events: @escaping EventHandler = { _ in }
    ) async throws(TransferError) -> TransferResult {
        try await onOwnThread { () throws(TransferError) in
            let token: ResumeToken
            do throws(TransferError) {
                token = try self.loadToken(reference)
            } catch {
                guard error.code == .inputMissing, let ended = try self.endedResult(reference, events: events) else {
                    throw error
                }
                return ended
            }
            if let batch = token.upload?.batch {
                throw TransferError(
                    .usage, "\(token.id) is a file of folder upload \(batch): resume \(batch) continues it")
            }
            return try self.recorded(
                id: token.id, kind: token.kind, url: token.url, failedURL: newURL,
                { () throws(TransferError) in
                    guard
                        case .opened(let opened) = try self.open(
                            .resume(token, headers: headers, newURL: newURL), events: events)
                    else {
                        throw TransferError(.badToken, "token \(token.id) cannot be resumed")
                    }
                    defer { opened.lock.release() }
                    switch opened.token.kind {
                    case .download:
                        return .downloaded(
                            try self.runResumeDownload(
                                opened, stored: token, newURL: newURL, cancellation: cancellation, events: events))
                    case .upload:
                        return .uploaded(try self.runResumeUpload(opened, cancellation: cancellation, events: events))
                    }
                }, as: { $0 })
        }
    }

    /// Reads a token, mapping store errors to the documented exit statuses.
    public func loadToken(_ reference: String) throws(TransferError) -> ResumeToken {
        try store.loadChecked(reference)
    }
}

/// Runs blocking work (a libcurl transfer, a fsync) on a thread of its own, never on Swift's cooperative pool: a
/// private serial queue gets a dispatch worker thread that may block as long as it needs.
func runOnBackgroundThread(_ name: String, _ body: @escaping @Sendable () -> Void) {
    DispatchQueue(label: "resumectl." + name).async(execute: body)
}

/// ``runOnBackgroundThread(_:_:)`` for a caller that awaits the result.
func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws(TransferError) -> T) async throws(TransferError)
    -> T
{
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

// MARK: Starting, preparing, records

extension TransferClient {
    /// Starts a download whose events arrive as an `AsyncSequence` (``TransferRun/events``).
    public func start(_ request: DownloadRequest, cancellation: Cancellation = Cancellation()) -> TransferRun<
        DownloadResult
    > {
        TransferRun(cancellation: cancellation) { cancellation, events throws(TransferError) in
            try await download(request, cancellation: cancellation, events: events)
        }
    }

    /// Starts an upload whose events arrive as an `AsyncSequence` (``TransferRun/events``).
    public func start(_ request: UploadRequest, cancellation: Cancellation = Cancellation()) -> TransferRun<
        UploadResult
    > {
        TransferRun(cancellation: cancellation) { cancellation, events throws(TransferError) in
            try await upload(request, cancellation: cancellation, events: events)
        }
    }

    /// Checks a download and writes its token before any byte moves, so that its id can be announced, paused,
    /// cancelled, waited for and resumed at once (`--detach`, `--start-at`); returns the id. A file already at
    /// the output path (without `force`) gets no token: the download reports it as complete.
    public func prepare(_ request: DownloadRequest) throws(TransferError) -> String {
        guard case .opened(let opened) = try open(.download(request)) else { return downloadTokenID(request) ?? "" }
        defer { opened.lock.release() }
        if opened.isNew { try store.write(opened.token) }
        return opened.lock.id
    }

    /// Checks an upload (its source must be readable) and writes its token before any byte moves; returns the id.
    public func prepare(_ request: UploadRequest) throws(TransferError) -> String {
        if request.filePath == "-" {
            throw TransferError(.usage, "a stream (upload -) reads stdin: it runs in the foreground")
        }
        guard case .opened(let opened) = try open(.upload(request)) else { return uploadTokenID(request) }
        defer { opened.lock.release() }
        // The protocol is left open unless pinned: the detached run probes the server (`--protocol auto`).
        if opened.isNew { try store.write(opened.token) }
        return opened.lock.id
    }

    /// Where this client keeps the records of ended transfers (beside the tokens).
    public var results: ResultStore { ResultStore(directory: store.directory) }

    /// The record of a transfer that ended, or nil when neither a token nor a record knows `reference`.
    public func record(_ reference: String) -> TransferRecord? {
        results.load(id: reference)
    }

    /// Runs a transfer and keeps the record of its end (none without an `id`: a list's file that got no token).
    func recorded<Result>(
        id: String?, kind: ResumeToken.Kind, url: String, source: String? = nil, failedURL: String? = nil,
        _ run: () throws(TransferError) -> Result, as outcome: (Result) -> TransferResult
    ) throws(TransferError) -> Result {
        let began = Date()
        do throws(TransferError) {
            let result = try run()
            if let id {
                recordDone(id: id, kind: kind, url: url, result: outcome(result), source: source, since: began)
            }
            return result
        } catch {
            if let id { recordFailure(error, id: id, kind: kind, url: failedURL ?? url, source: source) }
            throw error
        }
    }

    /// - Parameter since: when the transfer began.
    private func recordDone(
        id: String, kind: ResumeToken.Kind, url: String, result: TransferResult, source: String? = nil, since: Date
    ) {
        // Under the id's lock only this run's finish writes a "done" record: one written since the start is that
        // one, known by a stat. (A file clock a tick behind costs a second write of it, never a lost one.)
        var st = stat()
        if stat(results.path(forID: id), &st) == 0,
            Double(st.st_mtim.tv_sec) + Double(st.st_mtim.tv_nsec) / 1e9 >= since.timeIntervalSince1970
        {
            return
        }
        let (at, path, bytes, sha256): (String, String?, Int64, String?) =
            switch result {
            case .downloaded(let d): (url, d.path, d.bytes, d.sha256)
            case .uploaded(let u):
                (
                    u.url, source.map(OutputPath.absolute) ?? (try? store.load(id))?.upload?.source.path, u.bytes,
                    u.sha256
                )
            }
        try? results.save(
            TransferRecord(
                id: id, kind: kind, outcome: .done, exit: 0, resumable: false, url: at, path: path, bytes: bytes,
                sha256: sha256))
    }

    /// Keeps the end of a transfer that was announced: refusals before it began and "running elsewhere" leave
    /// no record (the one running owns it).
    func recordFailure(_ error: TransferError, id: String, kind: ResumeToken.Kind, url: String, source: String? = nil) {
        if [.usage, .busy, .inputMissing, .badToken].contains(error.code) { return }
        let token = try? store.load(id)
        let path =
            token?.download?.path ?? token?.upload?.source.path ?? source.map(OutputPath.absolute)
            ?? (kind == .download ? OutputPath.resolve(url: url, output: nil) : nil)
        let bytes = token.map { t in t.download?.heldBytes ?? t.upload?.acknowledgedBytes ?? 0 }
        let outcome: TransferRecord.Outcome = if case .stopped = error.code { .paused } else { .failed }
        try? results.save(
            TransferRecord(
                id: id, kind: kind, outcome: outcome, exit: error.exitStatus,
                resumable: error.isResumable && token != nil, url: url,
                path: path, bytes: bytes, error: error.message))
    }

    /// `resume` of a transfer whose token is gone: a completed one answers as it did; any other says how it ended.
    func endedResult(_ reference: String, events: EventHandler) throws(TransferError) -> TransferResult? {
        guard let record = results.load(id: reference) else { return nil }
        switch record.outcome {
        case .done:
            events(.completed(location: record.resultLine, bytes: record.bytes ?? 0, sha256: record.sha256))
            switch record.kind {
            case .download:
                return .downloaded(
                    DownloadResult(path: record.resultLine, bytes: record.bytes ?? 0, sha256: record.sha256))
            case .upload:
                return .uploaded(UploadResult(url: record.url, bytes: record.bytes ?? 0, sha256: record.sha256))
            }
        case .cancelled:
            throw TransferError(.inputMissing, "\(record.id) was cancelled; there is nothing to resume")
        case .failed, .paused:
            throw TransferError(
                Self.code(forExit: record.exit),
                "\(record.id) failed and cannot be resumed: \(record.error ?? "unknown error")")
        }
    }

    private static func code(forExit status: Int32) -> TransferError.Code {
        switch status {
        case 65: .checksumMismatch
        case 73: .cannotCreateOutput
        case 74: .localIO
        default: .failed
        }
    }
}
