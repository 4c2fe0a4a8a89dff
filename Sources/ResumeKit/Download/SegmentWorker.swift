import Dispatch
import Glibc
import Synchronization
import SystemPackage

/// Fetches one segment on its own thread and connection, retrying with backoff until it is whole: a
/// ``Fetch`` bounded to the segment, whose output is the segment's range of the shared `.part`. The
/// transfer's thread reads only the atomics and the outcome; the fetch and its output are `run`'s alone.
final class SegmentWorker: @unchecked Sendable {
    enum Outcome {
        case changed(String)
        case failed(TransferError)
    }

    let start: Int64
    private let end: Int64
    private let session: any TransportSession
    private let options: TransferOptions
    private let stop: Cancellation
    private let ended: DispatchSemaphore
    /// The retries this segment shares with the others.
    private let budget: RetryBudget?

    private let done = Atomic<Bool>(false)
    private let state = Mutex<Outcome?>(nil)
    private let range: SegmentRange
    /// Asks for this segment's bytes and judges the answers, bounded to it; any change voids every segment.
    private let fetch: Fetch

    init(
        segment: ResumeToken.Segment, url: String, headers: [String], resource: DownloadStateMachine.Resource,
        fd: Int32, path: String,
        transport: any HTTPTransport, options: TransferOptions, connections: Int, stop: Cancellation,
        ended: DispatchSemaphore,
        budget: RetryBudget?
    ) {
        self.budget = budget
        self.start = segment.start
        self.end = segment.end
        self.session = transport.makeSession()
        // The connections share one transfer's worth of buffers (at least 64 KiB each).
        var options = options
        options.transport.receiveBufferSize = max(64 << 10, options.transport.receiveBufferSize / max(1, connections))
        self.options = options
        self.stop = stop
        self.ended = ended
        range = SegmentRange(
            start: segment.start, fd: fd, path: path, written: min(segment.committed, segment.length),
            gatherer: WriteGatherer(capacity: max(64 << 10, WriteGatherer.capacity / max(1, connections))))
        if segment.isDone { done.store(true, ordering: .releasing) }
        fetch = Fetch(
            url: url, headers: (try? HeaderLines.forDownload(headers)) ?? [:], output: range, resource: resource,
            onChange: .fail, bound: segment.start...segment.end, stallTimeout: options.transport.stallTimeout)
    }

    var written: Int64 { range.written }
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
            try Retrier.run(
                options, cancellation: stop, events: { _ in }, announces: false, budget: budget, stopped: "stopped"
            ) { () throws(TransferError) in try attempt() }
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
        var verdict: DownloadStateMachine.Verdict?
        var failure: TransferError?
        do {
            verdict = try fetch.perform(
                try fetch.request(), on: session, settings: options.transport, cancellation: stop)
        } catch let error as TransferError {
            failure = error
        } catch {
            // A bounded plan always asks (the segment's validator is known).
            failure = TransferError(.failed, "\(error)")
        }
        do { try range.flush() } catch { failure = failure ?? error }
        if isDone { return .done(()) }
        if let failure { return .done(report(.failed(failure))) }
        // A fault is the network's, never a fresh start: the segment's host answered the plan's HEAD.
        return try fetch.step(verdict!, finish: {}) { failure, _ in
            switch failure {
            case .changed(let reason): .done(report(.changed(reason)))
            case .status(let status, let reason): .done(report(.failed(.refused(status, reason, url: fetch.url))))
            }
        }
    }

    private func report(_ outcome: Outcome) {
        state.withLock { $0 = $0 ?? outcome }
    }
}

/// A segment's range of the shared `.part`: the output of its ``Fetch``.
private final class SegmentRange: FetchOutput {
    private let start: Int64
    private let fd: Int32
    /// The `.part` file's path, for messages.
    private let path: String
    private let progress: Atomic<Int64>
    /// Only written bytes count as `written`. The connections share one transfer's worth of memory.
    private let gatherer: WriteGatherer

    init(start: Int64, fd: Int32, path: String, written: Int64, gatherer: WriteGatherer) {
        self.start = start
        self.fd = fd
        self.path = path
        progress = Atomic(written)
        self.gatherer = gatherer
    }

    /// Bytes in the file from the segment's first one on; read by the transfer's thread too.
    var written: Int64 { progress.load(ordering: .acquiring) }

    var held: Int64 { start + written + Int64(gatherer.count) }

    /// The segment's bytes on disk from `offset` up to what it has written (the overlap to compare).
    func heldBytes(from offset: Int64) throws(TransferError) -> [UInt8] {
        let count = Int(start + written - offset)
        guard count > 0 else { return [] }
        var held = [UInt8](repeating: 0, count: count)
        let n = held.withUnsafeMutableBytes { pread(fd, $0.baseAddress, count, off_t(offset)) }
        guard n == count else {
            throw TransferError(.localIO, "cannot read \(path): \(String(cString: strerror(errno)))")
        }
        return held
    }

    func write(_ body: UnsafeRawBufferPointer) throws(TransferError) {
        try advance { () throws(Errno) in try gatherer.append(body, to: fd, at: start + written) }
    }

    /// Writes the gathered bytes after the segment's written ones.
    func flush() throws(TransferError) {
        try advance { () throws(Errno) in try gatherer.write(to: fd, at: start + written) }
    }

    /// Counts what `write` put in the file as written: only that is ever committed.
    private func advance(_ write: () throws(Errno) -> Int) throws(TransferError) {
        do throws(Errno) { progress.store(written + Int64(try write()), ordering: .releasing) } catch {
            throw TransferError(.localIO, "cannot write \(path): \(String(cString: strerror(error.rawValue)))")
        }
    }
}
