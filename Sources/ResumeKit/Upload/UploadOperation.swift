import FoundationEssentials

/// What a finished upload produced.
public struct UploadResult: Sendable, Equatable {
    /// The URL the file was uploaded to.
    public var url: String
    public var bytes: Int64
    public var sha256: String?
}

/// Runs one upload to its end on the calling thread: creation, and after any interruption HEAD for the
/// offset and PATCH from there, as the state machine says. The upload URL from the 104 is in the token
/// before the request body is done.
final class UploadOperation: ExchangeDelegate {
    private var token: ResumeToken
    private let store: TokenStore
    private let session: any TransportSession
    private let options: TransferOptions
    private let cancellation: Cancellation
    private let emit: EventHandler
    private let source: SourceFile
    private var machine: UploadStateMachine

    private var currentPlan: UploadStateMachine.Plan = .finished
    private var requestURL = ""
    private var bodyStart: Int64 = 0
    private var finalHead: ResponseHead?
    private var tooLarge: Int64?
    private var sentThisAttempt: Int64 = 0
    private var pacer = ProgressPacer()
    private var started = false
    private var saveError: String?
    /// The last exchange could not reach the server at all (see `TransferOptions.waitForNetwork`).
    private var networkDown = false

    private var upload: ResumeToken.UploadPart {
        get { token.upload! }
        set { token.upload = newValue }
    }

    init(
        token: ResumeToken, source: SourceFile, store: TokenStore, transport: any HTTPTransport, options: TransferOptions,
        versionPinned: Bool, chunkSize: Int64?, cancellation: Cancellation, events: @escaping EventHandler
    ) {
        self.token = token
        self.source = source
        self.store = store
        self.session = transport.makeSession()
        self.options = options
        self.cancellation = cancellation
        self.emit = events
        let u = token.upload!
        machine = UploadStateMachine(
            size: u.source.size, version: InteropVersion(rawValue: u.interopVersion) ?? .newest,
            versionPinned: versionPinned || u.uploadURL != nil, uploadURL: u.uploadURL, chunkSize: chunkSize)
    }

    func run() throws(TransferError) -> UploadResult {
        var backoff = Backoff(options.retry)
        var restarts = 0
        while true {
            if let reason = cancellation.reason { throw stop(reason) }
            currentPlan = machine.plan()
            let decision: UploadStateMachine.Decision
            switch currentPlan {
            case .finished:
                return try finish()
            case .create(let headers, let length, _):
                decision = exchange("POST", url: token.url, headers: headers, body: (0, length))
            case .queryOffset(let url, let headers):
                decision = exchange("HEAD", url: url, headers: headers, body: nil)
            case .append(let url, let headers, let offset, let length, _):
                decision = exchange("PATCH", url: url, headers: headers, body: (offset, length))
            }
            if let saveError { throw TransferError(.localIO, saveError, tokenID: token.id) }
            if let limit = tooLarge {
                throw TransferError(.failed, "the server accepts at most \(limit) bytes; the file has \(upload.source.size)", tokenID: nil)
            }
            switch decision {
            case .proceed:
                if case .append(_, let offset) = machine.state, offset != upload.acknowledgedBytes {
                    upload.acknowledgedBytes = offset
                    try save()
                }
                continue
            case .completed:
                return try finish()
            case .restarted(let reason):
                restarts += 1
                guard restarts <= 3 else { throw TransferError(.failed, "giving up: \(reason), again and again", tokenID: token.id) }
                emit(.restarted(reason: reason))
                upload.uploadURL = nil
                upload.acknowledgedBytes = 0
                try save()
            case .fail(let reason):
                throw TransferError(.failed, reason, tokenID: nil)
            case .retry(let reason, let retryAfter):
                if retryAfter == "0" {  // a protocol step (version switch, offset check), not a failure
                    upload.interopVersion = machine.version.rawValue
                    try save()
                    continue
                }
                if !machine.serverSupportsDraft { upload.resumable = false }
                try save()
                if networkDown && options.waitForNetwork {
                    let delay = backoff.networkWait(progressMade: sentThisAttempt > 0)
                    emit(.waitingForNetwork(delay: delay, error: reason))
                    if !cancellation.sleep(seconds: delay) { throw stop(cancellation.reason ?? .interrupt) }
                    continue
                }
                guard let delay = backoff.next(progressMade: sentThisAttempt > 0, retryAfter: retryAfter) else {
                    let hint = machine.serverSupportsDraft ? "" : " (the server cannot resume uploads)"
                    throw TransferError(.retriesExhausted, "\(reason); gave up after \(backoff.retriesMade) retries\(hint)", tokenID: token.id)
                }
                emit(.retry(attempt: backoff.failures, delay: delay, error: reason))
                if !cancellation.sleep(seconds: delay) { throw stop(cancellation.reason ?? .interrupt) }
            }
        }
    }

    /// Sends one request of the plan and turns what happened into a decision.
    private func exchange(_ method: String, url: String, headers: HeaderFields, body: (offset: Int64, length: Int64)?) -> UploadStateMachine.Decision {
        var all = (try? HeaderLines.parse(token.headers)) ?? [:]
        if !Origin.same(url, token.url) {
            // Credentials are for the origin the user named, not for wherever a Location points.
            for name in ["Authorization", "Cookie", "Proxy-Authorization"] { all.remove(name) }
        }
        for field in headers.fields { all.set(field.name, field.value) }
        requestURL = url
        networkDown = false
        finalHead = nil
        sentThisAttempt = 0
        bodyStart = body?.offset ?? upload.acknowledgedBytes
        let request = TransferRequest(
            method: method, url: url, headers: all, followRedirects: false,
            body: body.map { RequestBody(fileDescriptor: source.fd, offset: $0.offset, length: $0.length) })
        if !started, let body {
            started = true
            emit(.started(kind: .upload, url: token.url, path: source.path, offset: body.offset, total: upload.source.size))
        }
        let result = session.perform(request, settings: options.transport, cancellation: cancellation, delegate: self)
        switch result.outcome {
        case .completed:
            guard let head = finalHead ?? result.head else {
                return machine.exchangeFailed("the server sent no response", during: currentPlan)
            }
            return machine.response(head, to: currentPlan)
        case .cancelled, .abortedByDelegate:
            return .retry(reason: "stopped", retryAfter: "0")
        case .stalled:
            return machine.exchangeFailed("no progress for \(options.transport.stallTimeout) s", during: currentPlan)
        case .failed(let failure):
            switch failure.kind {
            case .fatal: return .fail(reason: failure.message)
            case .localRead: return .fail(reason: failure.message)
            case .resolve where upload.uploadURL == nil && !machine.serverSupportsDraft && !options.waitForNetwork:
                return .fail(reason: failure.message)
            case .network, .resolve:
                networkDown = failure.isNetworkDown
                return machine.exchangeFailed(failure.message, during: currentPlan)
            }
        }
    }

    // MARK: ExchangeDelegate

    func exchange(informational head: ResponseHead) {
        guard let url = machine.informational(head, requestURL: requestURL) else { return }
        if let max = UploadStateMachine.maxSize(head), max < upload.source.size {
            tooLarge = max
            return
        }
        // Persist now: if the link dies in the next millisecond, this URL is what lets us resume.
        upload.uploadURL = url
        upload.interopVersion = machine.version.rawValue
        upload.resumable = true
        do { try save() } catch { saveError = error.message }
    }

    func exchange(head: ResponseHead, effectiveURL: String) -> Bool {
        finalHead = head
        return true
    }

    func exchange(body: UnsafeRawBufferPointer) -> Bool { true }

    func exchange(progressReceived received: Int64, sent: Int64) -> Bool {
        if tooLarge != nil { return false }  // the server's limit is known to be too small: stop sending
        sentThisAttempt = sent
        let bytes = bodyStart + sent
        if let rate = pacer.tick(bytes: bytes) { emit(.progress(bytes: bytes, total: upload.source.size, rate: rate)) }
        return true
    }

    // MARK: Finish

    private func save() throws(TransferError) {
        do { try store.save(token) } catch { throw TransferError(.localIO, "\(error)", tokenID: token.id) }
    }

    private func finish() throws(TransferError) -> UploadResult {
        upload.acknowledgedBytes = upload.source.size
        let digest = options.computeSHA256 ? try source.sha256() : nil
        // The record before the token goes: a kill in between leaves an id that still answers.
        try? ResultStore(directory: store.directory).save(TransferRecord(
            id: token.id, kind: .upload, outcome: .done, exit: 0, resumable: false, url: token.url, path: source.path,
            bytes: upload.source.size, sha256: digest))
        store.remove(id: token.id)
        emit(.completed(location: token.url, bytes: upload.source.size, sha256: digest))
        return UploadResult(url: token.url, bytes: upload.source.size, sha256: digest)
    }

    private func stop(_ reason: StopReason) -> TransferError {
        try? save()
        emit(.paused(offset: upload.acknowledgedBytes))
        let what = reason == .interrupt ? "interrupted" : "paused"
        return TransferError(.stopped(reason), "\(what); the server will be asked for its offset on resume", tokenID: token.id)
    }
}

/// Scheme, host and port of a URL, compared for "same origin".
enum Origin {
    static func same(_ a: String, _ b: String) -> Bool {
        guard let x = URLComponents(string: a), let y = URLComponents(string: b) else { return false }
        return x.scheme?.lowercased() == y.scheme?.lowercased() && x.host?.lowercased() == y.host?.lowercased()
            && (x.port ?? defaultPort(x.scheme)) == (y.port ?? defaultPort(y.scheme))
    }

    private static func defaultPort(_ scheme: String?) -> Int { scheme?.lowercased() == "https" ? 443 : 80 }
}
