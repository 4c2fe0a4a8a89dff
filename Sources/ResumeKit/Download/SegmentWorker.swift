import Dispatch
import Glibc
import Synchronization
import SystemPackage

/// Fetches one segment on its own thread and connection, retrying with backoff until it is whole.
final class SegmentWorker: ExchangeDelegate, @unchecked Sendable {
    enum Outcome {
        case changed(String)
        case failed(TransferError)
    }

    let index: Int
    let start: Int64
    private let end: Int64
    private let url: String
    private let headers: [String]
    private let fd: Int32
    /// The `.part` file's path, for messages.
    private let path: String
    private let session: any TransportSession
    private let options: TransferOptions
    private let stop: Cancellation
    private let ended: DispatchSemaphore
    /// The retries this segment shares with the others.
    private let budget: RetryBudget?

    private let progress: Atomic<Int64>
    /// Only written bytes count as `written`. The connections share one transfer's worth of memory.
    private let gatherer: WriteGatherer
    private let done = Atomic<Bool>(false)
    private let state = Mutex<Outcome?>(nil)
    /// Judges this segment's answers, bounded to it; any change voids every segment.
    private var machine: DownloadStateMachine
    private var decision: DownloadStateMachine.Decision?
    private var writeError: String?
    private var receivedThisAttempt: Int64 = 0
    /// The bytes on disk the start of this attempt's body must equal (see `SegmentRules.resumeStart`).
    private var overlap = OverlapCheck.none
    private var requestedFrom: Int64 = 0

    init(
        index: Int, segment: ResumeToken.Segment, url: String, headers: [String], resource: DownloadStateMachine.Resource, fd: Int32, path: String,
        transport: any HTTPTransport, options: TransferOptions, connections: Int, stop: Cancellation, ended: DispatchSemaphore,
        budget: RetryBudget?
    ) {
        self.budget = budget
        self.index = index
        self.start = segment.start
        self.end = segment.end
        self.url = url
        self.headers = headers
        machine = DownloadStateMachine(resource: resource, onChange: .fail)
        self.fd = fd
        self.path = path
        self.session = transport.makeSession()
        // The connections share one transfer's worth of buffers (at least 64 KiB each), so that
        // memory stays that of a single transfer however many there are.
        var options = options
        let share = max(64 << 10, options.transport.receiveBufferSize / max(1, connections))
        options.transport.receiveBufferSize = share
        self.options = options
        self.stop = stop
        self.ended = ended
        gatherer = WriteGatherer(capacity: max(64 << 10, WriteGatherer.capacity / max(1, connections)))
        progress = Atomic(min(segment.committed, segment.length))
        if segment.isDone { done.store(true, ordering: .releasing) }
    }

    /// Bytes of this segment written to the file so far.
    var written: Int64 { progress.load(ordering: .acquiring) }
    var isDone: Bool { written >= end - start + 1 }
    var isFinished: Bool { done.load(ordering: .acquiring) }
    var failure: Outcome? { state.withLock { $0 } }

    func run() {
        defer {
            done.store(true, ordering: .releasing)
            ended.signal()
        }
        // Segments retry quietly: the transfer's own line reports progress, and a failure ends it with its reason.
        do {
            try Retrier.run(options, cancellation: stop, events: { _ in }, announces: false, budget: budget, stopped: "stopped") { () throws(TransferError) in try attempt() }
        } catch {
            // A stop ends the segment quietly: the transfer says it once.
            if case .stopped = error.code { return }
            report(.failed(error))
        }
    }

    /// One ranged GET of what the segment still lacks. Done: the segment is complete, stopped, or reported
    /// an end of its own (a change, a refusal, a local write error).
    private func attempt() throws(TransferError) -> Retrier.Attempt<Void> {
        guard !isDone && !stop.isStopped else { return .done(()) }
        var fields = (try? HeaderLines.forDownload(headers)) ?? [:]
        requestedFrom = SegmentRules.resumeStart(segmentStart: start, written: written)
        fields.set("Range", "bytes=\(requestedFrom)-\(end)")
        fields.set("If-Range", machine.resource?.validator ?? "")
        guard let held = readHeld(from: requestedFrom) else {
            return .done(report(.failed(TransferError(.localIO, "cannot read \(path): \(String(cString: strerror(errno)))"))))
        }
        overlap = OverlapCheck(held: held, from: requestedFrom)
        decision = nil
        writeError = nil
        receivedThisAttempt = 0
        let result = session.perform(TransferRequest(method: "GET", url: url, headers: fields, followRedirects: true),
            settings: options.transport, cancellation: stop, delegate: self)
        if writeError == nil { writeError = flush() }
        if isDone { return .done(()) }
        if let writeError { return .done(report(.failed(TransferError(.localIO, writeError)))) }
        switch machine.verdict(result.outcome, decision, held: written, expected: end - start + 1, stallTimeout: options.transport.stallTimeout) {
        case .done, .again: return .done(())
        case .refetchFromZero(let reason), .fail(.changed(let reason)): return .done(report(.changed(reason)))
        case .fail(.status(let status, let reason)): return .done(report(.failed(.refused(status, reason, url: url))))
        case .fault(let fault):
            // The segment's host answered the plan's HEAD: a name that stops resolving is the network (not fresh).
            return .failed(fault, progressMade: receivedThisAttempt > 0)
        }
    }

    private func report(_ outcome: Outcome) {
        state.withLock { $0 = $0 ?? outcome }
    }

    func exchange(head: ResponseHead, effectiveURL: String) -> Bool {
        let d = machine.evaluate(head, requestedOffset: requestedFrom, through: end)
        decision = d
        if case .write = d { return true }
        return false
    }

    func exchange(body received: UnsafeRawBufferPointer) -> Bool {
        var body = received
        switch overlap.consume(body) {
        case .differs(let offset):
            decision = machine.overlapDiffers(at: offset)
            return false
        case .matched(let rest):
            body = rest
            if body.isEmpty { return true }
        }
        guard start + written + Int64(gatherer.count) + Int64(body.count) <= end + 1 else {
            decision = .fail(.changed("the server sent more than the range asked for"))
            return false
        }
        do throws(Errno) {
            progress.store(written + Int64(try gatherer.append(body, to: fd, at: start + written)), ordering: .releasing)
        } catch {
            writeError = message(error)
            return false
        }
        receivedThisAttempt += Int64(body.count)
        return true
    }

    /// The segment's bytes on disk from `offset` up to what it has written (the overlap to compare).
    private func readHeld(from offset: Int64) -> [UInt8]? {
        let count = Int(start + written - offset)
        guard count > 0 else { return [] }
        var held = [UInt8](repeating: 0, count: count)
        let n = held.withUnsafeMutableBytes { pread(fd, $0.baseAddress, count, off_t(offset)) }
        return n == count ? held : nil
    }

    /// Writes the gathered bytes after the segment's written ones; the error message, if any.
    private func flush() -> String? {
        do throws(Errno) {
            progress.store(written + Int64(try gatherer.write(to: fd, at: start + written)), ordering: .releasing)
            return nil
        } catch {
            return message(error)
        }
    }

    private func message(_ error: Errno) -> String { "cannot write \(path): \(String(cString: strerror(error.rawValue)))" }
}
