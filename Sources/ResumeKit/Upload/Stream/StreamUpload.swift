import Dispatch
import FoundationEssentials
import Glibc
import Synchronization

/// `producer | resumectl upload - URL`: an upload (IETF draft, tus or S3 multipart) whose length is unknown
/// when it starts.
///
/// A reader thread copies stdin into a spool (bounded by `--spool-max`), checksumming it block by block into
/// the token's ledger; the sender appends what was read (IETF: `Upload-Complete: ?0` until stdin ended; tus:
/// created with `Upload-Defer-Length`) through the same ``UploadOperation`` as a file, so cuts, stalls and
/// 5xx are survived from the spool, which then drops what the server acknowledged. An IETF append goes on
/// while more is read (one request while the stream flows, as `curl -T -` sends it). The token records a
/// byte by checksum (the ledger's blocks, the open block's `tail`) before it is sent: the server never holds
/// a byte the token cannot account for. The spool is not fsynced while the stream flows (a kill leaves its
/// bytes in the page cache; a power loss needs the stream replayed anyway, checked against those
/// checksums), so acknowledged bytes are punched out before they reach the disk; once stdin ends, what the
/// server has not acknowledged is fsynced before the token says so.
///
/// Across processes: a token whose stream ended resumes from the spool alone; a cut before the end needs
/// the stream again, checked against the ledger (below the spool) and the spool (inside it) before anything
/// new is appended; a different stream fails with exit 65.
final class StreamUpload: @unchecked Sendable {
    /// The token but for its upload state (`upload`), whose stream state is `stream`.
    private let header: ResumeToken
    private var upload: ResumeToken.UploadPart
    private var stream: ResumeToken.StreamState
    private var token: ResumeToken {
        var part = upload
        part.stream = stream
        return header.with(.upload(part))
    }
    private let store: TokenStore
    private let transport: any HTTPTransport
    private let options: TransferOptions
    private let cancellation: Cancellation
    private let emit: EventHandler
    private let input: Int32
    /// The protocol's machine (IETF, tus or S3 multipart, whose parts are cut from the spool).
    private var sender: any StreamingUploadMachine
    private let spoolPath: String

    /// What the stdin reader and the sender share; the spool itself is only touched under this lock.
    private struct Shared: @unchecked Sendable {
        let spool: Spool
        var ended: Bool
        var failure: TransferError?
        var writer: LedgerWriter
        /// SHA-256 of the whole stream, while every byte of it passed through this process.
        var hasher: MessageDigest?
    }
    private let shared: Mutex<Shared>
    /// Rung by the reader when the spool grew, stdin ended or reading failed.
    private let dataArrived = Doorbell()
    /// Rung when acknowledged bytes left the spool.
    private let spaceFreed = Doorbell()
    /// Punches acknowledged bytes out of the spool in order, off the sender's thread: a hole may wait for its
    /// TRIM (a `discard` mount: 0.8 s a GiB on the build machine). Drained before the spool is closed.
    private let releases = DispatchQueue(label: "resumectl.spool-release")
    /// Where the holes asked of ``releases`` end (the spool's `start` follows as each is punched).
    private var punchedTo: Int64

    init(
        token: ResumeToken, spool: Spool, sender: any StreamingUploadMachine, input: Int32, hashesWholeStream: Bool,
        store: TokenStore,
        transport: any HTTPTransport, options: TransferOptions, cancellation: Cancellation,
        events: @escaping EventHandler
    ) throws(TransferError) {
        header = token
        upload = try token.uploadPart()
        guard var state = upload.stream else { throw TransferError(.badToken, "token \(token.id) has no stream state") }
        // Blocks past `durable` (tokens of earlier releases could record some) are read and hashed again.
        state.ledger.blocks = Array(state.ledger.blocks.prefix(Int(state.durable / state.ledger.blockSize)))
        state.synced = spool.synced
        stream = state
        punchedTo = spool.start
        self.sender = sender
        self.input = input
        self.store = store
        self.transport = transport
        self.options = options
        self.cancellation = cancellation
        self.emit = events
        spoolPath = spool.path
        shared = Mutex(
            Shared(
                spool: spool, ended: state.ended, failure: nil, writer: LedgerWriter(state.ledger),
                hasher: hashesWholeStream ? MessageDigest(.sha256) : nil))
    }

    // MARK: Replay

    /// Checks a replayed stream against what this upload already read, before anything new is appended:
    /// below the spool against the ledger, inside it against the spool, and past what the spool kept (what a
    /// power loss may have taken) against the ledger and the open block's checksum, refilling the spool.
    /// Also brings the ledger's open block and the whole-stream hash up to date.
    func verifyReplay() throws(TransferError) {
        let state = stream
        let blockSize = state.ledger.blockSize
        let ledgerEnd = Int64(state.ledger.blocks.count) * blockSize
        let kept = shared.withLock { $0.spool.end }
        var below = ReplayCheck(ledger: state.ledger, upTo: state.start)
        let refillFrom = kept / blockSize * blockSize
        var refill =
            kept < state.durable
            ? ReplayCheck(ledger: state.ledger, from: refillFrom, upTo: state.durable, tail: state.tail) : nil
        var offset: Int64 = 0
        let buffers = UnsafeMutableRawBufferPointer.allocate(byteCount: 512 << 10, alignment: 16)
        defer { buffers.deallocate() }
        let buffer = UnsafeMutableRawBufferPointer(rebasing: buffers[..<(256 << 10)])
        // the spool's bytes at the same offsets
        let held = UnsafeMutableRawBufferPointer(rebasing: buffers[(256 << 10)...])
        while offset < state.durable {
            let want = Int(min(Int64(buffer.count), state.durable - offset))
            let n = try readInput(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<want]))
            if n == 0 && offset == 0 {
                throw TransferError(
                    .inputMissing,
                    "stdin is empty: the stream of \(token.id) was cut before its end; pipe the same stream in again "
                        + "(producer | resumectl resume \(token.id))",
                    tokenID: token.id)
            }
            guard n > 0 else {
                throw TransferError(
                    .sourceChanged,
                    "the stream ended after \(offset) bytes, but this upload had read \(state.durable): not the same "
                        + "stream; nothing was appended",
                    tokenID: token.id)
            }
            let chunk = UnsafeRawBufferPointer(rebasing: buffer[0..<n])
            /// The part of this chunk at stream offsets `[from, to)`.
            func part(_ from: Int64, _ to: Int64) -> UnsafeRawBufferPointer {
                let lo = Int(min(max(from - offset, 0), Int64(n)))
                let hi = Int(min(max(to - offset, 0), Int64(n)))
                return UnsafeRawBufferPointer(rebasing: chunk[lo..<max(lo, hi)])
            }
            if case .differs(let block) = below.feed(part(0, state.start)) {
                throw differs(at: Int64(block) * blockSize)
            }
            let inSpool = part(state.start, kept)
            var at = 0
            while at < inSpool.count {
                let position = max(offset, state.start) + Int64(at)
                let target = UnsafeMutableRawBufferPointer(rebasing: held[0..<(inSpool.count - at)])
                let got = try shared.withLock { shared throws(TransferError) in
                    try shared.spool.read(at: position, into: target)
                }
                guard got > 0, memcmp(held.baseAddress!, inSpool.baseAddress! + at, got) == 0 else {
                    throw differs(at: position)
                }
                at += got
            }
            if case .differs(let block) = refill?.feed(part(refillFrom, state.durable)) {
                throw differs(at: Int64(block) * blockSize)
            }
            let lost = part(kept, state.durable)
            try shared.withLock { shared throws(TransferError) in
                if !lost.isEmpty { try shared.spool.append(lost) }
                shared.writer.feed(part(ledgerEnd, state.durable))
                shared.hasher?.update(bufferPointer: chunk)
            }
            offset += Int64(n)
        }
    }

    private func differs(at offset: Int64) -> TransferError {
        TransferError(
            .sourceChanged,
            "the stream differs from the one this upload began with (at byte \(offset)); nothing was appended",
            tokenID: token.id)
    }

    // MARK: Sending

    func run() throws(TransferError) -> UploadResult {
        defer { releases.sync {} }
        do {
            return try send()
        } catch {
            // A spool that cannot be written (a full disk: 74) keeps its token: what the token recorded is
            // intact, and once there is room `resume` (with the stream piped again, if it had not ended) goes on.
            var error = error
            if error.code == .localIO, error.tokenID == nil {
                try? save()
                error.tokenID = token.id
            }
            throw error
        }
    }

    private func send() throws(TransferError) -> UploadResult {
        if !stream.ended { startReader() }
        var announced = false
        while true {
            if let reason = cancellation.reason { throw stopped(reason) }
            let (durable, ended) = try nextBatch()
            let digest = ended ? shared.withLock { $0.hasher.map { $0.finalize().hex } } : nil
            let source = SpoolSource(fd: shared.withLock { $0.spool.fileDescriptor }, path: spoolPath, hash: digest)
            let result = try append(sender, upTo: durable, ended: ended, source: source, announced: announced)
            announced = true
            if let result {
                releases.sync {}
                shared.withLock { $0.spool.remove() }
                return result
            }
            try dropAcknowledged()
        }
    }

    /// Runs one append through ``UploadOperation`` with the machine extended to the bytes now durable; the
    /// append may grow (``grow(sentUpTo:)``) while more becomes durable.
    private func append<Machine: StreamingUploadMachine>(
        _ machine: Machine, upTo durable: Int64, ended: Bool, source: SpoolSource, announced: Bool
    ) throws(TransferError) -> UploadResult? {
        var machine = machine
        try machine.extend(to: max(durable, machine.size), final: ended)
        requestBegan = (Monotonic.now, machine.acknowledgedBytes)
        let operation = try UploadOperation(
            token: token, source: source, machine: machine, store: store, transport: transport, options: options,
            cancellation: cancellation, events: emit, streamOpen: !ended, announced: announced, session: session,
            growth: { [unowned self] in grow(sentUpTo: $0) }, pauseNote: "; " + resumeHint)
        defer {
            upload = operation.upload
            stream = upload.stream ?? stream
            sender = operation.machine
            session = operation.currentSession
        }
        return try operation.run()
    }

    /// The connection is kept from one append to the next.
    private var session: (any TransportSession)?
    /// When the current append began, and at which offset: it ends after `appendBudget` bytes or 30 s, so
    /// the server's acknowledgement frees the spool and the token's checkpoint moves.
    private var requestBegan: (time: Double, offset: Int64) = (0, 0)

    /// Called by the operation when an append sent every recorded byte: waits for more and gives the new end
    /// with the stream's state to record, or nil to end the append (the stream paused, the append is large or
    /// old enough, or stdin ended: its last request says so, once the token does).
    private func grow(sentUpTo offset: Int64) -> (end: Int64, stream: ResumeToken.StreamState)? {
        guard offset - requestBegan.offset < appendBudget(stream.spoolMax), Monotonic.now - requestBegan.time < 30,
            // Each growth is a token write: taken in steps. An idle wait stays within the stall timeout: it moves no
            // byte.
            let read = awaitRead(
                past: offset, step: growStep, patience: growWait,
                idle: min(1, Double(options.transport.stallTimeout) / 4)),
            read.failure == nil, read.end > offset
        else { return nil }
        adopt(read)
        return (read.end, stream)
    }

    /// Waits until the reader has `step` bytes past `from`, or any once `patience` seconds passed (or the spool
    /// is full); a failure or stdin's end at once. Nil when nothing came for `idle` seconds, or on a stop.
    private func awaitRead(past from: Int64, step: Int64, patience: Double, idle: Double = .infinity) -> Read? {
        let waitingSince = Monotonic.now
        while true {
            let read = snapshot()
            let fresh = read.end - from, waited = Monotonic.now - waitingSince
            if read.failure != nil || read.eof || fresh >= step || (fresh > 0 && (read.full || waited >= patience)) {
                return read
            }
            if cancellation.isStopped || (fresh <= 0 && waited >= idle) { return nil }
            dataArrived.wait(seconds: fresh > 0 ? patience - waited : min(1, idle - waited), unless: cancellation)
        }
    }

    /// What the reader has read at one instant: the spool's end, with the ledger and tail of exactly those bytes.
    private struct Read {
        var end: Int64
        var ledger: StreamLedger
        var tail: String?
        var eof, full: Bool
        var failure: TransferError?
    }

    private func snapshot() -> Read {
        let spoolMax = stream.spoolMax
        return shared.withLock {
            Read(
                end: $0.spool.end, ledger: $0.writer.ledger, tail: $0.writer.tail, eof: $0.ended,
                full: $0.spool.end - $0.spool.start >= spoolMax, failure: $0.failure)
        }
    }

    /// Waits for a batch of read bytes (or the end), then records them in the token.
    private func nextBatch() throws(TransferError) -> (durable: Int64, ended: Bool) {
        // A stream that ended before this run: its token already holds all of it.
        if stream.ended { return (stream.durable, true) }
        guard let read = awaitRead(past: sender.acknowledgedBytes, step: streamBatch, patience: 1) else {
            throw stopped(cancellation.reason ?? .interrupt)
        }
        if let failure = read.failure { throw failure }
        adopt(read)
        // Stdin ended: what the server has not acknowledged is fsynced, so that the token may say a resume needs
        // no input (the reader is done: the lock held through the fsync keeps no one waiting).
        if read.eof, sender.acknowledgedBytes < stream.durable {
            stream.synced = try shared.withLock { shared throws(TransferError) in try shared.spool.sync() }
        }
        stream.ended = read.eof
        try save()
        return (stream.durable, stream.ended)
    }

    /// Takes what was read as the stream's state to record: the server may hold it once the token does.
    private func adopt(_ read: Read) {
        stream.durable = read.end
        stream.ledger = read.ledger
        stream.tail = read.tail
        upload.source.size = read.end
    }

    /// The server holds everything below the machine's offset: the spool gives that space back, at block
    /// boundaries (a replay is checked against the ledger below them), and the reader may go on.
    private func dropAcknowledged() throws(TransferError) {
        // The token's ledger, which describes exactly its `durable` bytes: the reader's may hold more blocks.
        let start = max(
            shared.withLock { $0.spool.start }, stream.ledger.dropPoint(acknowledged: sender.acknowledgedBytes))
        // The token first, the hole second: a kill in between must not leave a token whose spool start
        // lies below a punched hole (a replay would then compare the stream with zeros and call it different).
        stream.start = start
        try save()
        guard start > punchedTo else { return }
        let (fd, from) = (shared.withLock { $0.spool.fileDescriptor }, punchedTo)
        releases.async { [self] in
            var failure: TransferError?
            do throws(TransferError) { try Spool.punch(fd: fd, path: spoolPath, from: from, to: start) } catch {
                failure = error
            }
            shared.withLock { shared in
                if let failure {
                    shared.failure = shared.failure ?? failure
                } else {
                    shared.spool.markDropped(below: start)
                }
            }
            spaceFreed.ring()
        }
        punchedTo = start
    }

    private func startReader() {
        let spoolMax = stream.spoolMax
        // A pipe holds 64 KiB by default: each read then returns at most that, and the producer sleeps whenever
        // the reader does. 1 MiB (the usual unprivileged maximum) quarters the reads and the wake-ups.
        var info = stat()
        if fstat(input, &info) == 0, info.st_mode & S_IFMT == S_IFIFO {
            _ = fcntl(input, 1031 /* F_SETPIPE_SZ */, Int32(1 << 20))
        }
        runOnBackgroundThread("stdin") { [self] in
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 << 10, alignment: 16)
            defer { buffer.deallocate() }
            while true {
                // Past --spool-max the reader waits for the server to acknowledge and the spool to drop.
                while shared.withLock({ $0.spool.end - $0.spool.start >= spoolMax }), !cancellation.isStopped {
                    spaceFreed.wait(seconds: 1, unless: cancellation)
                }
                if cancellation.isStopped { return }
                let n: Int
                do throws(TransferError) { n = try readInput(into: buffer) } catch {
                    shared.withLock { $0.failure = error }
                    dataArrived.ring()
                    return
                }
                let chunk = UnsafeRawBufferPointer(rebasing: buffer[0..<n])
                defer { dataArrived.ring() }
                let stop = shared.withLock { shared -> Bool in
                    if n == 0 {
                        shared.ended = true
                        return true
                    }
                    do throws(TransferError) {
                        try shared.spool.append(chunk)
                    } catch {
                        shared.failure = error
                        return true
                    }
                    shared.writer.feed(chunk)
                    shared.hasher?.update(bufferPointer: chunk)
                    return false
                }
                if stop { return }
            }
        }
    }

    private func readInput(into buffer: UnsafeMutableRawBufferPointer) throws(TransferError) -> Int {
        while true {
            let n = read(input, buffer.baseAddress, buffer.count)
            if n >= 0 { return n }
            if errno == EINTR { continue }
            throw TransferError(.localIO, "cannot read stdin: \(String(cString: strerror(errno)))", tokenID: token.id)
        }
    }

    private func save() throws(TransferError) {
        try store.write(token, keeping: true)
    }

    private func stopped(_ reason: StopReason) -> TransferError {
        try? save()
        emit(.paused(offset: sender.acknowledgedBytes))
        return .stopped(reason, "; " + resumeHint, tokenID: token.id)
    }

    private var resumeHint: String {
        stream.ended ? "resume sends the rest from the spool" : "resume needs the same stream on stdin again"
    }
}

/// A stream upload's send waits for this much new data (or the stream's end, or a second), so appends are not tiny.
private let streamBatch: Int64 = 8 << 20

/// A growing append takes more in steps of this much (or what came within ``growWait``): a token write each, 64 a GiB.
private let growStep: Int64 = 16 << 20, growWait = 0.25

/// The most one growing append carries (a quarter of the spool, at most 256 MiB): acknowledged bytes leave first.
private func appendBudget(_ spoolMax: Int64) -> Int64 { min(256 << 20, max(streamBatch, spoolMax / 4)) }
