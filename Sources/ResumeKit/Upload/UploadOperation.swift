import FoundationEssentials

/// What a finished upload produced.
public struct UploadResult: Sendable, Equatable {
    /// The URL the file was uploaded to.
    public var url: String
    public var bytes: Int64
    public var sha256: String?
}

/// Runs one upload to its end on the calling thread, for any protocol behind ``UploadMachine``: it sends
/// what the machine plans, feeds it what came back, and owns what every protocol shares — token writes
/// (an upload URL from a 1xx is in the token before the body is through), retry and backoff, pause and
/// cancel, events, body checksums, and credentials that stay on the user's origin.
final class UploadOperation<Machine: UploadMachine>: ExchangeDelegate {
    private var token: ResumeToken
    private let store: TokenStore
    private var session: any TransportSession
    private let transport: any HTTPTransport
    private let options: TransferOptions
    private let cancellation: Cancellation
    private let emit: EventHandler
    private let source: any UploadSource
    /// The machine as the last exchange left it (a stream continues with it once more bytes arrived).
    private(set) var machine: Machine
    /// A stream whose end has not been read yet: `run` returns (nil) once the server holds every byte
    /// the machine was given, instead of finishing.
    private let streamOpen: Bool
    /// Lets an open stream's append go on with what became durable while it was sent.
    private let growth: BodyGrowth?

    private var currentPlan: Machine.Plan
    private var requestURL = ""
    private var bodyStart: Int64 = 0
    private var finalHead: ResponseHead?
    private var tooLarge: Int64?
    private var sentThisAttempt: Int64 = 0
    private var pacer = ProgressPacer()
    private var started = false
    private var saveError: String?
    /// The server answered at least once: its name resolved.
    private var answered = false
    /// How the last exchange ended without a final answer, if it did.
    private var lastFailure: ExchangeFailure?
    private enum ExchangeFailure {
        case transport(TransportFailure)
        case stalled
    }

    private var upload: ResumeToken.UploadPart {
        get { token.upload! }
        set { token.upload = newValue }
    }

    /// The token as the operation last wrote it.
    var currentToken: ResumeToken { token }
    /// The session, kept for the next operation of the same upload (a stream's next append).
    var currentSession: any TransportSession { session }

    /// The upload's length when it is known (a stream's only once its end was read).
    private var total: Int64? { streamOpen ? nil : upload.source.size }

    init(
        token: ResumeToken, source: any UploadSource, machine: Machine, store: TokenStore, transport: any HTTPTransport,
        options: TransferOptions, cancellation: Cancellation, events: @escaping EventHandler, streamOpen: Bool = false,
        announced: Bool = false, session: (any TransportSession)? = nil, growth: BodyGrowth? = nil
    ) {
        self.streamOpen = streamOpen
        self.started = announced
        self.growth = streamOpen ? growth : nil
        self.token = token
        self.source = source
        self.store = store
        self.session = session ?? transport.makeSession()
        self.transport = transport
        self.options = options
        self.cancellation = cancellation
        self.emit = events
        self.machine = machine
        currentPlan = machine.plan()
    }

    /// Sends until the upload is complete (a file's upload, or a stream whose end was read).
    func runToEnd() throws(TransferError) -> UploadResult {
        guard let result = try run() else { throw TransferError(.failed, "the upload stopped before its end", tokenID: token.id) }
        return result
    }

    /// Sends until the upload is complete; for an open stream, until the server holds all it was given (nil).
    func run() throws(TransferError) -> UploadResult? {
        var retrier = Retrier(options, cancellation: cancellation, events: emit)
        var restarts = 0
        while true {
            if let reason = cancellation.reason { throw stop(reason) }
            if streamOpen, machine.canResume, machine.acknowledgedBytes >= machine.size {
                try checkpoint()
                return nil
            }
            currentPlan = machine.plan()
            guard let request = machine.exchange(for: currentPlan) else { return try finish() }
            let decision = exchange(request)
            if let saveError { throw TransferError(.localIO, saveError, tokenID: token.id) }
            if let limit = tooLarge {
                throw TransferError(.failed, "the server accepts at most \(limit) bytes; the file has \(upload.source.size)",
                    status: 413, tokenID: nil)
            }
            switch decision {
            case .proceed, .step:
                try checkpoint()
                continue
            case .completed:
                return try finish()
            case .restarted(let reason) where (upload.stream?.start ?? 0) > 0:
                // The bytes below the spool's start are gone: only a replay of the stream could send them again.
                throw TransferError(.failed, "\(reason); the first \(upload.stream!.start) bytes of the stream are no longer held, so the upload cannot start over",
                    tokenID: nil)
            case .restarted(let reason):
                restarts += 1
                guard restarts <= 3 else { throw TransferError(.failed, "giving up: \(reason), again and again", tokenID: token.id) }
                emit(.restarted(reason: reason))
                upload.uploadURL = nil
                upload.acknowledgedBytes = 0
                try checkpoint(force: true)
            case .fail(let reason):
                throw TransferError(.failed, reason, status: refusedStatus, tokenID: nil)
            case .retry(let reason, let retryAfter):
                try wait(after: fault(reason, retryAfter: retryAfter), progressMade: sentThisAttempt > 0, retrier: &retrier)
            case .resend(let reason):
                try wait(after: .lost(reason), progressMade: false, retrier: &retrier)
            }
        }
    }

    /// How the last exchange went wrong, told in `reason`, the machine's words for it.
    private func fault(_ reason: String, retryAfter: String?) -> Fault {
        switch lastFailure {
        case .transport(let failure)?:
            return Fault(failure).withMessage(reason)
        case .stalled?: return .lost(reason)
        case nil:
            if let status = finalHead?.status, status >= 400 { return .status(status, retryAfter: retryAfter, message: reason) }
            return .lost(reason)
        }
    }

    /// The status of a final answer that refused the last request.
    private var refusedStatus: Int? { finalHead.flatMap { $0.status >= 400 ? $0.status : nil } }

    private func wait(after fault: Fault, progressMade: Bool, retrier: inout Retrier) throws(TransferError) {
        if !machine.canResume { upload.resumable = false }
        try checkpoint(force: true)
        let fresh = upload.uploadURL == nil && upload.acknowledgedBytes == 0 && !answered
        switch retrier.after(fault, fresh: fresh, progressMade: progressMade) {
        case .again: return
        case .stopped(let reason): throw stop(reason)
        case .failed(let message): throw TransferError(.failed, message, tokenID: nil)
        case .exhausted(let message):
            let hint = machine.canResume ? "" : " (the server cannot resume uploads)"
            throw TransferError(.retriesExhausted, message + hint, tokenID: token.id)
        }
    }

    /// Writes what the machine knows into the token, when that changed anything.
    private func checkpoint(force: Bool = false) throws(TransferError) {
        var part = upload
        machine.record(into: &part)
        guard force || part != upload else { return }
        upload = part
        try save()
    }

    /// Sends one request of the plan and turns what happened into a decision.
    private func exchange(_ planned: UploadExchange) -> UploadDecision {
        let url = planned.url ?? token.url
        var all = (try? HeaderLines.parse(token.headers)) ?? [:]
        if !Origin.same(url, token.url) {
            // Credentials are for the origin the user named, not for wherever a Location points.
            for name in ["Authorization", "Cookie", "Proxy-Authorization"] { all.remove(name) }
        }
        for field in planned.headers.fields { all.set(field.name, field.value) }
        if let checksum = planned.checksum, let body = planned.body {
            do throws(TransferError) {
                all.set(checksum.header, checksum.prefix + (try source.digest(body, checksum.algorithm)))
            } catch {
                return .fail(reason: error.message)
            }
        }
        requestURL = url
        lastFailure = nil
        finalHead = nil
        sentThisAttempt = 0
        bodyStart = planned.body?.offset ?? upload.acknowledgedBytes
        let grows = growth != nil && machine.canGrow(currentPlan)
        let request = TransferRequest(
            method: planned.method, url: url, headers: all, followRedirects: false,
            body: planned.body.map { RequestBody(fileDescriptor: source.fd, offset: $0.offset, length: $0.length, grows: grows) })
        if !started, let body = planned.body {
            started = true
            emit(.started(kind: .upload, url: token.url, path: source.path, offset: body.offset, total: total))
        }
        let result = session.perform(request, settings: options.transport, cancellation: cancellation, delegate: self)
        if request.body != nil, let status = (finalHead ?? result.head)?.status, status >= 400 {
            // A server that refused a request may have answered before reading its body (NIOResumableUpload's
            // 400 naming its interop version does): the next request on that connection would find the rest
            // of the refused body in its way and wait forever. The next request gets a new connection.
            session = transport.makeSession()
        }
        switch result.outcome {
        case .completed:
            guard let head = finalHead ?? result.head else {
                return machine.exchangeFailed("the server sent no response", during: currentPlan)
            }
            return machine.response(head, to: currentPlan)
        case .cancelled, .abortedByDelegate:
            return .step(reason: "stopped")
        case .stalled:
            lastFailure = .stalled
            return machine.exchangeFailed("no progress for \(options.transport.stallTimeout) s", during: currentPlan)
        case .failed(let failure):
            if failure.kind == .fatal || failure.kind == .localRead { return .fail(reason: failure.message) }
            lastFailure = .transport(failure)
            return machine.exchangeFailed(failure.message, during: currentPlan)
        }
    }

    // MARK: ExchangeDelegate

    func exchange(informational head: ResponseHead) {
        switch machine.informational(head, requestURL: requestURL) {
        case .nothing:
            return
        case .tooLarge(let limit):
            tooLarge = limit
        case .uploadURL(let url):
            // Persist now: if the link dies in the next millisecond, this URL is what lets us resume.
            machine.record(into: &upload)
            upload.uploadURL = url
            upload.resumable = true
            do { try save() } catch { saveError = error.message }
        }
    }

    func exchange(head: ResponseHead, effectiveURL: String) -> Bool {
        finalHead = head
        answered = true
        return true
    }

    func exchange(body: UnsafeRawBufferPointer) -> Bool { true }

    func exchange(bodyEndedAt length: Int64) -> Int64? {
        guard let growth, let next = growth(bodyStart + length) else { return nil }
        // The token records the stream's new durable end before any byte of it leaves.
        upload.stream = next.stream
        upload.source.size = next.end
        do { try save() } catch {
            saveError = error.message
            return nil
        }
        currentPlan = machine.grow(currentPlan, to: next.end - bodyStart)
        return next.end - bodyStart
    }

    func exchange(progressReceived received: Int64, sent: Int64) -> Bool {
        if tooLarge != nil { return false }  // the server's limit is known to be too small: stop sending
        sentThisAttempt = sent
        let bytes = bodyStart + sent
        if let rate = pacer.tick(bytes: bytes) { emit(.progress(bytes: bytes, total: total, rate: rate)) }
        return true
    }

    // MARK: Finish

    private func save() throws(TransferError) {
        try store.write(token, keeping: true)
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
        let then = machine.canResume ? "the server will be asked for its offset on resume" : "a resume sends the whole file again"
        return .stopped(reason, "; " + then, tokenID: token.id)
    }
}

/// How an open stream's append goes on (``UploadMachine/canGrow(_:)``): told where the body's bytes end
/// (an offset in the stream), it waits for more to become durable and gives the new end with the stream's
/// state to record before sending on, or nil to end the request there.
typealias BodyGrowth = (_ sentUpTo: Int64) -> (end: Int64, stream: ResumeToken.StreamState)?

/// Scheme, host and port of a URL, compared for "same origin".
enum Origin {
    static func same(_ a: String, _ b: String) -> Bool {
        guard let x = URLComponents(string: a), let y = URLComponents(string: b) else { return false }
        return x.scheme?.lowercased() == y.scheme?.lowercased() && x.host?.lowercased() == y.host?.lowercased()
            && (x.port ?? defaultPort(x.scheme)) == (y.port ?? defaultPort(y.scheme))
    }

    private static func defaultPort(_ scheme: String?) -> Int { scheme?.lowercased() == "https" ? 443 : 80 }
}
