import Dispatch
import FoundationEssentials
import Synchronization

/// Runs one upload to its end on the calling thread, for any protocol behind ``UploadMachine``: it sends
/// what the machine plans, feeds it what came back, and owns what every protocol shares — token writes
/// (an upload URL from a 1xx is in the token before the body is through), retry and backoff, pause and
/// cancel, events, body checksums, and credentials that stay on the user's origin. A lone exchange runs on
/// the calling thread; several at once (S3's parts) each on a thread of its own, answered as they end.
final class UploadOperation<Machine: UploadMachine>: @unchecked Sendable {
    /// The token but for its upload state, which is `upload`.
    private let header: ResumeToken
    var upload: ResumeToken.UploadPart
    var token: ResumeToken { header.with(.upload(upload)) }
    let store: TokenStore
    private let transport: any HTTPTransport
    let options: TransferOptions
    let cancellation: Cancellation
    let emit: EventHandler
    let source: any UploadSource
    /// The machine as the last exchange left it (a stream continues with it once more bytes arrived).
    private(set) var machine: Machine
    /// A stream whose end was not read: `run` returns nil once the server holds all the machine was given.
    private let streamOpen: Bool
    /// Lets an open stream's append go on with what became durable while it was sent.
    let growth: BodyGrowth?
    /// False for a batch's small file: no token, no result record (the batch's ledger records it).
    private let durable: Bool
    /// Concurrent requests shared with the other files of a batch: each exchange holds one while it runs.
    private let budget: RequestBudget?
    /// What a pause says after "paused" instead of the machine's note: a stream's, whatever the protocol.
    private let pauseNote: String?

    /// Sessions not in use: one exchange at a time goes over the connection libcurl already holds.
    private var idle: [any TransportSession] = []
    /// An exchange broke (cut, stalled, a body libcurl could not send again): until a body goes through
    /// again, every exchange opens a connection of its own, so a retry does not repeat the road that broke
    /// (`serve` over TLS left a PATCH after a HEAD on the same connection unanswered after a cut, for ever).
    private var freshConnections = false
    /// Stops the exchanges that run beside others when one of them ends the upload (or on pause).
    private var flightStop = Cancellation()
    private let landed = Mutex<[Flight]>([])
    /// Rung by each exchange that ends; a pause ends the wait too.
    private let landing = Doorbell()
    let progress = Mutex(Progress())
    var tooLarge: Int64?
    private var started = false
    var saveError: String?
    /// The server answered at least once: its name resolved.
    private var answered = false
    /// The last exchange that ended: its answer, and how it failed if it did.
    private var finalHead: ResponseHead?
    /// What the server held at the last failed attempt: only more kept starts the count of failures again,
    /// so a server that swallows every PATCH (or a plain one that keeps nothing of a cut) is not tried forever.
    private var keptAtLastFailure: Int64 = 0
    private var lastFailure: Fault?

    /// A connection to keep for the next operation of the same upload (a stream's next append).
    var currentSession: (any TransportSession)? { idle.last }

    /// The upload's length when it is known (a stream's only once its end was read).
    var total: Int64? { streamOpen ? nil : upload.source.size }

    init(
        token: ResumeToken, source: any UploadSource, machine: Machine, store: TokenStore, transport: any HTTPTransport,
        options: TransferOptions, cancellation: Cancellation, events: @escaping EventHandler, streamOpen: Bool = false,
        announced: Bool = false, session: (any TransportSession)? = nil, growth: BodyGrowth? = nil,
        durable: Bool = true,
        budget: RequestBudget? = nil, pauseNote: String? = nil
    ) throws(TransferError) {
        header = token
        self.durable = durable
        self.budget = budget
        self.pauseNote = pauseNote
        upload = try token.uploadPart()
        self.growth = streamOpen ? growth : nil
        if let session { idle = [session] }
        self.streamOpen = streamOpen
        self.started = announced
        self.source = source
        self.store = store
        self.transport = transport
        self.options = options
        self.cancellation = cancellation
        self.emit = events
        self.machine = machine
    }

    /// Sends until the upload is complete; for an open stream, until the server holds all it was given (nil).
    func run() throws(TransferError) -> UploadResult? {
        var running: [Flight] = []
        defer {
            // Parts S3 took while the upload stopped or failed go into the token as well.
            if !running.isEmpty {
                ground(&running, keeping: true)
                try? checkpoint()
            }
        }
        let fresh = {
            RetryRules.isFresh(
                held: self.upload.acknowledgedBytes, known: self.upload.uploadURL != nil || self.answered)
        }
        let restart = { (reason: String) throws(TransferError) in
            self.ground(&running, keeping: false)
            self.emit(.restarted(reason: reason))
            self.upload.uploadURL = nil
            self.upload.acknowledgedBytes = 0
            try self.checkpoint(force: true)
        }
        return try Retrier.run(
            options, cancellation: cancellation, events: emit, fresh: fresh, stopped: "", explain: explain,
            restart: restart
        ) { () throws(TransferError) -> Retrier.Attempt<UploadResult?> in
            defer { progress.withLock { $0.base = machine.acknowledgedBytes } }
            if running.isEmpty {
                if let reason = cancellation.reason { throw stop(reason) }
                if streamOpen, machine.canResume, machine.acknowledgedBytes >= machine.size {
                    try checkpoint()
                    return .done(nil)
                }
            }
            let decision = try next(&running)
            if let saveError { throw TransferError(.localIO, saveError, tokenID: token.id) }
            if let limit = tooLarge {
                throw TransferError(
                    .failed, "the server accepts at most \(limit) bytes; the file has \(upload.source.size)",
                    status: 413, tokenID: nil)
            }
            switch decision {
            case nil, .completed?:
                return .done(try finish())
            case .noted(let lines)?:
                for line in lines { emit(.note(line)) }
                fallthrough
            case .proceed?, .step?:
                try checkpoint()
                return .next
            case .restarted(let reason)? where (upload.stream?.start ?? 0) > 0:
                // The bytes below the spool's start are gone: only a replay of the stream could send them again.
                throw TransferError(
                    .failed,
                    "\(reason); the first \(upload.stream?.start ?? 0) bytes of the stream are no longer held, so the "
                        + "upload cannot start over",
                    tokenID: nil)
            case .restarted(let reason)?:
                return .restart(reason)
            case .fail(let reason)?:
                if machine.failureKeepsToken { try checkpoint() }
                throw TransferError(
                    .failed, reason, status: refusedStatus, tokenID: machine.failureKeepsToken ? token.id : nil)
            case .corrupt(let reason)?:
                try checkpoint()
                throw TransferError(.checksumMismatch, reason, tokenID: token.id)
            case .retry(let reason, let retryAfter)?:
                let kept = machine.acknowledgedBytes
                defer { keptAtLastFailure = max(keptAtLastFailure, kept) }
                try beforeWait()
                return .failed(fault(reason, retryAfter: retryAfter), progressMade: kept > keptAtLastFailure)
            case .resend(let reason)?:
                try beforeWait()
                return .failed(.lost(reason))
            }
        }
    }

    /// Starts what the machine plans beside the exchanges in flight and returns what the next one to end
    /// (or a digest step) means; nil when the machine's plan is to finish.
    private func next(_ running: inout [Flight]) throws(TransferError) -> UploadDecision? {
        let plans = cancellation.isStopped ? [] : machine.plans(besides: running.map(\.plan))
        for plan in plans {
            if let wanted = machine.digests(for: plan) {
                var values: [[UInt8]] = []
                do {
                    for algorithm in wanted.algorithms {
                        values.append(try source.digestBytes(wanted.range, algorithm))
                    }
                } catch {
                    throw TransferError(error.code, error.message, tokenID: token.id)
                }
                return machine.digested(values, for: plan)
            }
            guard let planned = machine.exchange(for: plan) else { return nil }
            // The first exchange waits for a request of the batch's budget; one beside others starts only if one is
            // free.
            if let budget, !budget.take(waiting: running.isEmpty, unless: cancellation) {
                if running.isEmpty { return .step(reason: "stopped") }
                break
            }
            let flight = Flight(plan, planned, self)
            flight.holdsBudget = budget != nil
            if !started, planned.body != nil {
                started = true
                emit(
                    .started(
                        kind: .upload, url: token.url, path: source.path, offset: machine.acknowledgedBytes,
                        total: total))
            }
            progress.withLock { $0.base = machine.acknowledgedBytes }
            flight.session = idle.popLast() ?? transport.makeSession()
            if plans.count == 1 && running.isEmpty {
                flight.fly(cancellation: cancellation)
                return conclude(flight)
            }
            running.append(flight)
            let stop = flightStop
            runOnBackgroundThread("upload") { [self] in
                flight.fly(cancellation: stop)
                landed.withLock { $0.append(flight) }
                landing.ring()
            }
        }
        guard !running.isEmpty else {
            throw TransferError(.failed, "the upload has nothing left to send but is not complete", tokenID: token.id)
        }
        return conclude(land(&running))
    }

    /// Waits for an exchange in flight to end; a pause reaches them all.
    private func land(_ running: inout [Flight]) -> Flight {
        while true {
            if let reason = cancellation.reason { flightStop.stop(reason) }
            if let flight = landed.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) {
                running.removeAll { $0 === flight }
                return flight
            }
            // Woken by the next exchange to end, or by a pause (after which only the ends are waited for).
            landing.wait(seconds: 3600, unless: cancellation.isStopped ? neverStopped : cancellation)
        }
    }

    /// Stops the exchanges in flight and waits for them; with `keeping`, the machine learns of those that succeeded.
    private func ground(_ running: inout [Flight], keeping: Bool) {
        guard !running.isEmpty else { return }
        flightStop.stop(.pause)
        while !running.isEmpty {
            let flight = land(&running)
            if keeping, flight.head?.isSuccess == true { _ = conclude(flight) } else { release(flight) }
        }
        flightStop = Cancellation()
    }

    /// How the last exchange went wrong, told in `reason`, the machine's words for it.
    private func fault(_ reason: String, retryAfter: String?) -> Fault {
        if let lastFailure { return lastFailure.withMessage(reason) }  // a stall is told as a lost exchange
        if let status = finalHead?.status, status >= 400 {
            return .status(status, retryAfter: retryAfter, message: reason)
        }
        return .lost(reason)
    }

    /// The status of a final answer that refused the last request.
    private var refusedStatus: Int? { finalHead.flatMap { $0.status >= 400 ? $0.status : nil } }

    /// A failed attempt's state goes into the token before the wait, so a kill during it loses nothing.
    private func beforeWait() throws(TransferError) {
        if !machine.canResume { upload.resumable = false }
        try checkpoint(force: true)
    }

    /// The attempt loop's giving up, told with the token.
    private func explain(_ error: TransferError) -> TransferError {
        switch error.code {
        case .stopped(let reason): return stop(reason)
        case .retriesExhausted:
            let hint = machine.canResume ? "" : " (the server cannot resume uploads)"
            return TransferError(.retriesExhausted, error.message + hint, tokenID: token.id)
        default:
            return TransferError(
                error.code, error.message, status: error.status, tokenID: machine.failureKeepsToken ? token.id : nil)
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

    /// Gives an ended exchange's session back, unless a connection broke since the last body went through,
    /// or the server refused a body it may not have read.
    private func release(_ flight: Flight) {
        progress.withLock { $0.sent[ObjectIdentifier(flight)] = nil }
        if flight.holdsBudget { budget?.give() }
        flight.holdsBudget = false
        guard let session = flight.session else { return }
        switch flight.result?.outcome {
        case .failed?, .stalled?:
            // The connection broke, stalled, or libcurl could not send the body again on a new one.
            freshConnections = true
            return
        default:
            if flight.request.body != nil, flight.head?.isSuccess == true { freshConnections = false }
        }
        if freshConnections { return }
        if flight.request.body != nil, let status = (flight.head ?? flight.result?.head)?.status, status >= 400 {
            // A server may refuse before reading the body (NIOResumableUpload's 400 naming its interop
            // version): the next request on that connection would wait forever behind the rest of it.
            return
        }
        idle.append(session)
    }

    /// Turns how an exchange ended into the machine's decision.
    private func conclude(_ flight: Flight) -> UploadDecision {
        release(flight)
        for head in flight.informationals { informational(head, requestURL: flight.request.url) }
        lastFailure = nil
        finalHead = flight.head ?? flight.result?.head
        if flight.head != nil { answered = true }
        if let error = flight.digestError { return .fail(reason: error.message) }
        guard let result = flight.result else { return .step(reason: "stopped") }
        switch result.outcome {
        case .completed:
            guard let head = finalHead else {
                return machine.exchangeFailed("the server sent no response", during: flight.plan)
            }
            return machine.response(head, body: flight.body, checksum: flight.checksum, to: flight.plan)
        case .cancelled, .abortedByDelegate:
            return .step(reason: "stopped")
        case .stalled:
            lastFailure = .stalled(seconds: options.transport.stallTimeout)
            return machine.exchangeFailed("no progress for \(options.transport.stallTimeout) s", during: flight.plan)
        case .failed(let failure):
            if failure.kind == .fatal || failure.kind == .localRead { return .fail(reason: failure.message) }
            lastFailure = Fault(failure)
            return machine.exchangeFailed(failure.message, during: flight.plan)
        }
    }

    func informational(_ head: ResponseHead, requestURL: String) {
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

    /// An open stream's append sent all it had: asks for more, and records it before any of it leaves.
    func grow(_ flight: Flight, sentUpTo length: Int64) -> Int64? {
        guard let growth, let start = flight.request.body?.offset, let next = growth(start + length) else { return nil }
        upload.stream = next.stream
        upload.source.size = next.end
        do { try save() } catch {
            saveError = error.message
            return nil
        }
        flight.plan = machine.grow(flight.plan, to: next.end - start)
        return next.end - start
    }

    // MARK: Finish

    func save() throws(TransferError) {
        if durable { try store.write(token, keeping: true) }
    }

    private func finish() throws(TransferError) -> UploadResult {
        upload.acknowledgedBytes = upload.source.size
        let digest = options.computeSHA256 ? try source.sha256() : nil
        if durable {
            // The record before the token goes: a kill in between leaves an id that still answers.
            try? ResultStore(directory: store.directory).save(
                TransferRecord(
                    id: token.id, kind: .upload, outcome: .done, exit: 0, resumable: false, url: token.url,
                    path: source.path,
                    bytes: upload.source.size, sha256: digest))
            store.remove(id: token.id)
        }
        let location = machine.location ?? token.url
        emit(.completed(location: location, bytes: upload.source.size, sha256: digest))
        return UploadResult(url: location, bytes: upload.source.size, sha256: digest)
    }

    private func stop(_ reason: StopReason) -> TransferError {
        try? save()
        emit(.paused(offset: upload.acknowledgedBytes))
        return .stopped(reason, pauseNote ?? machine.pauseNote, tokenID: token.id)
    }
}

/// A flag nobody raises: the wait for exchanges in flight that a pause already reached.
private let neverStopped = Cancellation()
