import Glibc
import SystemPackage

/// Where a ``Fetch`` keeps the body: a `.part` file, one range of a shared `.part` (a segment), stdout, a
/// list's small file. Offsets are the file's: a segment's output holds bytes from its first one on.
protocol FetchOutput: AnyObject {
    /// Where the bytes held end: a resume continues there.
    var held: Int64 { get }
    /// How many of the bytes before `held` can still be read back for the overlap check (a pipe keeps a ring
    /// of the last ones; a file all of them).
    var retained: Int64 { get }
    /// Whether bytes held can be given up: a file can be cut back, what went into a pipe cannot.
    var rewinds: Bool { get }
    /// The held bytes from `offset` to `held`, to compare with the first bytes of a resumed answer.
    func heldBytes(from offset: Int64) throws(TransferError) -> [UInt8]
    /// The body is kept from `from` on (a rewinding output drops what it holds after it); `machine` knows
    /// the resource now. Throws to refuse the answer.
    func begin(at from: Int64, restarted: String?, machine: DownloadStateMachine, effectiveURL: String)
        throws(TransferError)
    /// Keeps the next bytes of the body.
    func write(_ body: UnsafeRawBufferPointer) throws(TransferError)
    /// Called as the exchange runs (libcurl's progress callback): a chance to end an answer that outgrew the
    /// output. Throws to end the exchange.
    func tick(now: Double) throws(TransferError)
    /// Reads held bytes back, for a hash that starts at byte 0 of a resumed file.
    func read(at offset: Int64, into buffer: UnsafeMutableRawBufferPointer) throws -> Int
}

extension FetchOutput {
    var retained: Int64 { held }
    var rewinds: Bool { true }
    func begin(at from: Int64, restarted: String?, machine: DownloadStateMachine, effectiveURL: String)
        throws(TransferError)
    {}
    func tick(now: Double) throws(TransferError) {}
    func read(at offset: Int64, into buffer: UnsafeMutableRawBufferPointer) throws -> Int { 0 }
}

/// One ranged GET, the same for every download (a file, each segment, stdout, each file of a list): it asks
/// the state machine what to request for the bytes its output holds, judges the head, checks a resume's
/// overlap, hashes from byte 0, paces `progress`, and gives a verdict. What it leads to is its job's.
final class Fetch: ExchangeDelegate {
    /// Judges the answers; knows the resource once an answer named it.
    private(set) var machine: DownloadStateMachine
    private unowned let output: any FetchOutput
    let url: String
    private let headers: HeaderFields
    /// A segment's bytes: only exactly this part of the same file will do.
    private let bound: ClosedRange<Int64>?
    private let stallTimeout: Int
    /// `started` and `progress` go here; nil for a segment, whose job speaks for all of them.
    private let emit: EventHandler?
    /// The path the events name.
    private let path: String

    // The exchange in flight.
    private var requested: Int64 = 0
    private var decision: DownloadStateMachine.Decision?
    /// Bytes of the answer before its overlap that a pipe already passed on.
    private var skip: Int64 = 0
    private var overlap = OverlapCheck.none
    /// Where the body is kept from once the overlap matched, and why it starts over (nil: a resume).
    private var pending: (from: Int64, restarted: String?)?
    private var answeredFrom = ""
    /// Body bytes kept in this exchange: one that moved some is progress for the retry rules.
    private(set) var received: Int64 = 0
    /// What the output threw: the exchange ends with it.
    private(set) var failure: TransferError?
    /// Where the last answer came from, after redirects.
    private(set) var effectiveURL: String?

    /// `started` was said (by this fetch or, for a list's file, by the pass before it).
    private(set) var announced: Bool
    /// SHA-256 of the bytes from 0 up to `upTo`, when the job wants one or the server sent `Repr-Digest`.
    private var hash: (sha256: MessageDigest, upTo: Int64)?
    private let hashes: Bool
    private var pacer = ProgressPacer()

    init(
        url: String, headers: HeaderFields, output: any FetchOutput, resource: DownloadStateMachine.Resource? = nil,
        onChange: DownloadStateMachine.OnChange, bound: ClosedRange<Int64>? = nil, hashes: Bool = false,
        stallTimeout: Int,
        path: String = "", announced: Bool = false, events: EventHandler? = nil
    ) {
        self.url = url
        self.headers = headers
        self.output = output
        machine = DownloadStateMachine(resource: resource, onChange: onChange)
        self.bound = bound
        self.hashes = hashes
        self.stallTimeout = stallTimeout
        self.path = path
        self.announced = announced
        emit = events
    }

    /// The request for what the output lacks, or the failure the plan is (a resume no validator can check,
    /// when changes fail).
    func request() throws(DownloadStateMachine.Failure) -> TransferRequest {
        switch bound.map({ machine.plan(committed: heldInBound, within: $0) }) ?? machine.plan(committed: heldInBound) {
        case .fail(let failure):
            throw failure
        case .fetch(let offset, let range):
            var fields = headers
            for field in range.fields { fields.set(field.name, field.value) }
            requested = offset
            decision = nil
            pending = nil
            overlap = .none
            skip = 0
            failure = nil
            received = 0
            return TransferRequest(method: "GET", url: url, headers: fields, followRedirects: true)
        }
    }

    /// The bytes the output holds, counted from the segment's first one.
    private var heldInBound: Int64 { output.held - (bound?.lowerBound ?? 0) }

    /// Sends the planned request and waits for its end.
    func perform(
        _ request: TransferRequest, on session: any TransportSession, settings: TransportSettings,
        cancellation: Cancellation
    ) throws(TransferError) -> DownloadStateMachine.Verdict {
        try settle(session.perform(request, settings: settings, cancellation: cancellation, delegate: self))
    }

    /// How the exchange ended: the output's own failure, or the machine's verdict.
    func settle(_ result: ExchangeResult) throws(TransferError) -> DownloadStateMachine.Verdict {
        if let url = result.effectiveURL { effectiveURL = url }
        if let failure { throw failure }
        return machine.verdict(
            result.outcome, decision, held: heldInBound,
            expected: bound.map { $0.upperBound - $0.lowerBound + 1 }, stallTimeout: stallTimeout)
    }

    /// A verdict as the attempt loop's next step, the same on every output: a whole body is `finish`ed, an
    /// exchange cut short on this side goes again, a fault is counted (progress: bytes this exchange kept). A
    /// refusal or a change is the output's to `end`; `restarts` when the machine would start over from byte 0
    /// (the file changed and changes restart, or the server answered from another byte).
    func step<Value>(
        _ verdict: DownloadStateMachine.Verdict, finish: () throws(TransferError) -> Value,
        end: (_ failure: DownloadStateMachine.Failure, _ restarts: Bool) throws(TransferError) -> Retrier.Attempt<Value>
    ) throws(TransferError) -> Retrier.Attempt<Value> {
        switch verdict {
        case .done: .done(try finish())
        case .again: .next
        case .fault(let fault): .failed(fault, progressMade: received > 0)
        case .fail(let failure): try end(failure, false)
        case .refetchFromZero(let reason): try end(.changed(reason), true)
        }
    }

    /// The SHA-256 of everything held, reading back what arrived before this run began.
    func digest() throws -> String {
        var (sha256, upTo) = hash ?? (MessageDigest(.sha256), 0)
        // as fast as 1 MiB, a quarter of the pages
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 << 10, alignment: 16)
        defer { buffer.deallocate() }
        while upTo < output.held {
            let n = try output.read(at: upTo, into: buffer)
            guard n > 0 else { throw Errno.ioError }
            let take = Int(min(Int64(n), output.held - upTo))
            sha256.update(bufferPointer: UnsafeRawBufferPointer(rebasing: buffer[0..<take]))
            upTo += Int64(take)
        }
        return sha256.finalize().hex
    }

    // MARK: ExchangeDelegate

    func exchange(head: ResponseHead, effectiveURL: String) -> Bool {
        let before = machine.resource
        let d = machine.evaluate(head, requestedOffset: requested, through: bound?.upperBound)
        decision = d
        guard case .write(let from, let restarted) = d else { return false }
        answeredFrom = effectiveURL
        let held = output.held
        if restarted != nil, held > 0, !output.rewinds {
            // What went out cannot be taken back: only the same file sent whole (the range ignored) will do,
            // its bytes up to the ones held skipped.
            let now = machine.resource
            guard before?.validator != nil, now?.etag == before?.etag, now?.lastModified == before?.lastModified else {
                decision = .fail(.changed(restarted!))
                return false
            }
        } else if restarted != nil || from != requested || from >= held {
            return begin(at: from, restarted: restarted)
        }
        // A resume: the answer starts with bytes held. Compare them before anything is kept.
        let compareFrom = max(from, held - output.retained)
        skip = compareFrom - from
        do {
            overlap = OverlapCheck(held: try output.heldBytes(from: compareFrom), from: compareFrom)
        } catch {
            failure = error
            return false
        }
        pending = (held, nil)
        if skip == 0, overlap.isComplete { return begin(at: held, restarted: nil) }
        return true
    }

    /// Takes the body from `from` on: the output is told, the hash starts or goes on, `started` is said.
    private func begin(at from: Int64, restarted: String?) -> Bool {
        pending = nil
        do {
            try output.begin(at: from, restarted: restarted, machine: machine, effectiveURL: answeredFrom)
        } catch {
            failure = error
            return false
        }
        // Hashed as it arrives when it starts at zero; a resumed file is hashed from its start at the end,
        // so its first new byte does not wait for the data already held to be read back.
        if from == 0, hashes || machine.resource?.reprDigestSHA256 != nil {
            hash = (MessageDigest(.sha256), 0)
        } else if from != hash?.upTo {
            hash = nil
        }
        if !announced, let emit {
            announced = true
            emit(.started(kind: .download, url: url, path: path, offset: from, total: machine.resource?.totalBytes))
        }
        pacer = ProgressPacer(bytes: from)
        return true
    }

    func exchange(body received: UnsafeRawBufferPointer) -> Bool {
        var body = received
        if skip > 0 {
            let drop = Int(min(Int64(body.count), skip))
            skip -= Int64(drop)
            body = UnsafeRawBufferPointer(rebasing: body[drop...])
        }
        if let resumeAt = pending {
            switch overlap.consume(body) {
            case .differs(let offset):
                // What went out cannot be taken back: a pipe fails where a file starts over.
                decision =
                    output.rewinds
                    ? machine.overlapDiffers(at: offset)
                    : .fail(.changed(DownloadStateMachine.overlapReason(at: offset)))
                return false
            case .matched(let rest):
                guard overlap.isComplete, skip == 0 else { return true }
                // The bytes agree: the answer goes on exactly where the bytes held end.
                decision = .write(from: resumeAt.from, restarted: nil)
                guard begin(at: resumeAt.from, restarted: nil) else { return false }
                body = rest
            }
        }
        guard !body.isEmpty else { return true }
        if let bound, output.held + Int64(body.count) > bound.upperBound + 1 {
            decision = .fail(.changed("the server sent more than the range asked for"))
            return false
        }
        let at = output.held
        do { try output.write(body) } catch {
            failure = error
            return false
        }
        if hash?.upTo == at {
            hash!.sha256.update(bufferPointer: body)
            hash!.upTo += Int64(body.count)
        }
        self.received += Int64(body.count)
        progress(Monotonic.now)
        return true
    }

    func exchange(progressReceived received: Int64, sent: Int64) -> Bool {
        let now = Monotonic.now
        do { try output.tick(now: now) } catch {
            failure = error
            return false
        }
        progress(now)
        return true
    }

    private func progress(_ now: Double) {
        guard announced, let emit, let rate = pacer.tick(bytes: output.held, now: now) else { return }
        emit(.progress(bytes: output.held, total: machine.resource?.totalBytes, rate: rate))
    }
}
