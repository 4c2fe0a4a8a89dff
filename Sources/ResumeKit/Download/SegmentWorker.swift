import Dispatch
import Glibc
import Synchronization
import SystemPackage

/// Fetches one segment from one of the file's URLs on its own thread and connection, retrying with backoff until
/// it is whole: a ``Fetch`` bounded to the segment, whose output is the segment's range of the shared `.part`. A
/// mirror not asked yet is asked with HEAD first (the same length, a strong validator). The transfer's thread reads
/// only the atomics and the outcome; the fetch and its output are `run`'s alone.
final class SegmentWorker: @unchecked Sendable {
    enum Outcome {
        /// The segment is whole; `verified` when its pieces' hashes matched, nil when it has none.
        case finished(verified: Bool?)
        /// Stopped (a pause, the others' failure, a faster mirror taking over): the bytes held stay.
        case stopped
        case changed(String)
        case failed(TransferError)
        /// Its bytes fail their pieces' hashes: they are given up.
        case corrupt(String)
    }

    let segment: Int
    let origin: Int
    let start: Int64
    private let end: Int64
    private let url: String
    private let headers: HeaderFields
    private let total: Int64
    private let session: any TransportSession
    private let options: TransferOptions
    /// Stops this segment alone; the transfer stops every one.
    let stop = Cancellation()
    private let ended: DispatchSemaphore
    /// The retries this segment shares with the others.
    private let budget: RetryBudget?
    private let pieces: ResumeToken.Pieces?
    private let range: SegmentRange
    private let resource: Mutex<DownloadStateMachine.Resource?>
    private let done = Atomic<Bool>(false)
    private let state = Mutex<Outcome?>(nil)

    init(
        segment index: Int, of segment: ResumeToken.Segment, url: String, headers: [String],
        resource: DownloadStateMachine.Resource?, total: Int64, pieces: ResumeToken.Pieces?, fd: Int32, path: String,
        transport: any HTTPTransport, options: TransferOptions, connections: Int, origin: Int,
        ended: DispatchSemaphore, budget: RetryBudget?
    ) {
        self.segment = index
        self.origin = origin
        self.budget = budget
        self.start = segment.start
        self.end = segment.end
        self.url = url
        self.headers = (try? HeaderLines.forDownload(headers)) ?? [:]
        self.total = total
        self.pieces = pieces
        self.resource = Mutex(resource)
        self.session = transport.makeSession()
        // The connections share one transfer's worth of buffers (at least 64 KiB each).
        var options = options
        options.transport.receiveBufferSize = max(64 << 10, options.transport.receiveBufferSize / max(1, connections))
        self.options = options
        self.ended = ended
        range = SegmentRange(
            start: segment.start, fd: fd, path: path, written: min(segment.committed, segment.length),
            gatherer: WriteGatherer(capacity: max(64 << 10, WriteGatherer.capacity / max(1, connections))))
    }

    var written: Int64 { range.written }
    var isDone: Bool { written >= end - start + 1 }
    var isFinished: Bool { done.load(ordering: .acquiring) }
    var outcome: Outcome? { state.withLock { $0 } }
    /// What the mirror's HEAD told (or what it was started with).
    var learned: DownloadStateMachine.Resource? { resource.withLock { $0 } }

    func run() {
        defer {
            done.store(true, ordering: .releasing)
            ended.signal()
        }
        var fetch: Fetch?
        // Segments retry quietly: the transfer's own line reports progress, and a failure ends it with its reason.
        do {
            try Retrier.run(
                options, cancellation: stop, events: { _ in }, announces: false, budget: budget, stopped: "stopped"
            ) { () throws(TransferError) in try attempt(&fetch) }
        } catch {
            // A stop ends the segment quietly: the transfer says it once.
            if case .stopped = error.code { return report(.stopped) }
            return report(.failed(error))
        }
        guard isDone else { return report(.stopped) }
        guard let pieces else { return report(.finished(verified: nil)) }
        do {
            let bad = try pieces.failing(start...end, fd: range.fd, total: total, path: range.path)
            report(bad.isEmpty ? .finished(verified: true) : .corrupt("piece \(bad[0]) fails its \(pieces.algorithm)"))
        } catch {
            report(.failed(error))
        }
    }

    /// One ranged GET of what the segment still lacks (a HEAD first for a mirror not asked yet). Done: the segment
    /// is complete, stopped, or reported an end of its own (a change, a refusal, a local write error).
    private func attempt(_ fetch: inout Fetch?) throws(TransferError) -> Retrier.Attempt<Void> {
        guard !isDone && !stop.isStopped else { return .done(()) }
        if fetch == nil {
            if learned == nil {
                switch RangeProbe.ask(
                    url, headers: headers, session: session, settings: options.transport, cancellation: stop)
                {
                case .fault(let fault):
                    return .failed(fault)
                case .refused(_, let refusal):
                    return .done(report(.failed(TransferError(.failed, refusal.description))))
                case .resource(let found, _) where found.totalBytes != total:
                    let length = "it serves \(found.totalBytes ?? 0) bytes, not \(total)"
                    return .done(report(.failed(TransferError(.failed, length))))
                case .resource(let found, _):
                    resource.withLock { $0 = found }
                }
            }
            fetch = Fetch(
                url: url, headers: headers, output: range, resource: learned, onChange: .fail,
                bound: start...end, stallTimeout: options.transport.stallTimeout)
        }
        let fetch = fetch!
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
        // A fault is the network's, never a fresh start: the segment's host answered its HEAD.
        return try fetch.step(verdict!, finish: {}) { failure, _ in
            switch failure {
            case .changed(let reason): .done(report(.changed(reason)))
            case .status(let status, let reason): .done(report(.failed(.refused(status, reason, url: url))))
            }
        }
    }

    private func report(_ outcome: Outcome) {
        state.withLock { $0 = $0 ?? outcome }
    }
}

extension ResumeToken.Pieces {
    /// The pieces within `bytes` of the `.part` whose hashes do not match, by number.
    func failing(_ bytes: ClosedRange<Int64>, fd: Int32, total: Int64, path: String) throws(TransferError) -> [Int] {
        guard let algorithm = DigestAlgorithm(rawValue: String(algorithm.filter { $0 != "-" })) else {
            throw TransferError(.badToken, "unknown piece hash \(algorithm)")
        }
        var failing: [Int] = []
        for piece in Int(bytes.lowerBound / length)...Int(bytes.upperBound / length) {
            let offset = Int64(piece) * length
            let range = BodyRange(offset: offset, length: min(length, total - offset))
            let hex = try FileDigest.digest(fd: fd, ranges: [range], algorithm, path: path).hex
            if hex != hashes[piece].lowercased() { failing.append(piece) }
        }
        return failing
    }
}

/// A segment's range of the shared `.part`: the output of its ``Fetch``.
private final class SegmentRange: FetchOutput {
    private let start: Int64
    let fd: Int32
    /// The `.part` file's path, for messages.
    let path: String
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
