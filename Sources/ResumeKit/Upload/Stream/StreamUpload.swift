import FoundationEssentials
import Glibc
import Synchronization

/// `producer | resumectl upload - URL`: an upload (IETF draft, tus or S3 multipart) whose length is unknown
/// when it starts.
///
/// A reader thread copies stdin into a spool file (bounded by `--spool-max`) and hashes it block by block
/// into the token's ledger; a sync thread makes what was read durable, in batches as large as arrived
/// during the last sync; the sender appends what is durable (IETF: `Upload-Complete: ?0`, `?1` once
/// stdin ended; tus: created with `Upload-Defer-Length`, the length sent once known) through the same
/// ``UploadOperation`` as file uploads, so cuts, stalls and 5xx are survived with HEAD + PATCH from the
/// spool, then drops what the server acknowledged. An IETF append goes on while more becomes durable
/// (one request for as long as the stream flows, as `curl -T -` sends it). Before a byte is sent the
/// token records it as durable: the server never holds a byte the token cannot account for.
///
/// Across processes: a token whose stream ended resumes from the spool alone. One cut before the end
/// needs the stream again: its first bytes are checked against the ledger (below the spool) and the spool
/// (inside it) before anything new is appended; a different stream fails with exit 65.
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
        /// The ledger as it was when the spool was last synced: it describes `spool.durable`.
        var durableLedger: StreamLedger
        /// SHA-256 of the whole stream, while every byte of it passed through this process.
        var hasher: MessageDigest?
    }
    private let shared: Mutex<Shared>
    /// Rung by the reader when the spool grew, stdin ended or reading failed.
    private let dataArrived = Doorbell()
    /// Rung by the sync thread when more of the spool became durable, or syncing failed.
    private let synced = Doorbell()
    /// Rung when acknowledged bytes left the spool.
    private let spaceFreed = Doorbell()
    private let puncher = HolePuncher()
    /// Where the holes asked of ``puncher`` end (the spool's `start` follows as each is punched).
    private var punchedTo: Int64

    init(
        token: ResumeToken, spool: Spool, sender: any StreamingUploadMachine, input: Int32, hashesWholeStream: Bool, store: TokenStore,
        transport: any HTTPTransport, options: TransferOptions, cancellation: Cancellation, events: @escaping EventHandler
    ) throws(TransferError) {
        header = token
        upload = try token.uploadPart()
        guard let state = upload.stream else { throw TransferError(.badToken, "token \(token.id) has no stream state") }
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
        shared = Mutex(Shared(spool: spool, ended: state.ended, failure: nil, writer: LedgerWriter(state.ledger),
            durableLedger: state.ledger, hasher: hashesWholeStream ? MessageDigest(.sha256) : nil))
    }

    // MARK: Replay

    /// Checks a replayed stream against what this upload already read, before anything new is appended:
    /// below the spool against the ledger, inside it against the spool itself. Also brings the ledger's
    /// open block up to date and, having seen every byte again, the whole-stream hash.
    func verifyReplay() throws(TransferError) {
        let state = stream
        let ledgerEnd = Int64(state.ledger.blocks.count) * state.ledger.blockSize
        var check = ReplayCheck(ledger: state.ledger, upTo: state.start)
        var offset: Int64 = 0
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 << 10, alignment: 16)
        let held = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 << 10, alignment: 16)
        defer {
            buffer.deallocate()
            held.deallocate()
        }
        while offset < state.durable {
            let want = Int(min(Int64(buffer.count), state.durable - offset))
            let n = try readInput(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<want]))
            if n == 0 && offset == 0 {
                throw TransferError(.inputMissing,
                    "stdin is empty: the stream of \(token.id) was cut before its end; pipe the same stream in again (producer | resumectl resume \(token.id))",
                    tokenID: token.id)
            }
            guard n > 0 else {
                throw TransferError(.sourceChanged,
                    "the stream ended after \(offset) bytes, but this upload had read \(state.durable): not the same stream; nothing was appended",
                    tokenID: token.id)
            }
            let chunk = UnsafeRawBufferPointer(rebasing: buffer[0..<n])
            var at = 0
            if offset < state.start {
                at = Int(min(Int64(n), state.start - offset))
                if case .differs(let block) = check.feed(UnsafeRawBufferPointer(rebasing: chunk[0..<at])) {
                    throw differs(at: Int64(block) * state.ledger.blockSize)
                }
            }
            while at < n {
                let position = offset + Int64(at)
                let target = UnsafeMutableRawBufferPointer(rebasing: held[0..<(n - at)])
                let got = try shared.withLock { shared throws(TransferError) in try shared.spool.read(at: position, into: target) }
                guard got > 0, memcmp(held.baseAddress!, chunk.baseAddress! + at, got) == 0 else { throw differs(at: position) }
                if position + Int64(got) > ledgerEnd {
                    let from = at + Int(max(0, ledgerEnd - position))
                    shared.withLock { $0.writer.feed(UnsafeRawBufferPointer(rebasing: chunk[from..<(at + got)])) }
                }
                at += got
            }
            shared.withLock { $0.hasher?.update(bufferPointer: chunk) }
            offset += Int64(n)
        }
    }

    private func differs(at offset: Int64) -> TransferError {
        TransferError(.sourceChanged, "the stream differs from the one this upload began with (at byte \(offset)); nothing was appended",
            tokenID: token.id)
    }

    // MARK: Sending

    func run() throws(TransferError) -> UploadResult {
        defer { puncher.drain() }
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
        if !stream.ended {
            shared.withLock { $0.durableLedger = $0.writer.ledger }
            startReader()
            startSyncer()
        }
        var announced = false
        while true {
            if let reason = cancellation.reason { throw stopped(reason) }
            let (durable, ended) = try nextBatch()
            let digest = ended ? shared.withLock { $0.hasher.map { $0.finalize().hex } } : nil
            let source = SpoolSource(fd: shared.withLock { $0.spool.fileDescriptor }, path: spoolPath, hash: digest)
            let result = try append(sender, upTo: durable, ended: ended, source: source, announced: announced)
            announced = true
            if let result {
                puncher.drain()
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
            growth: { [unowned self] in grow(sentUpTo: $0) })
        defer {
            upload = operation.upload
            stream = upload.stream ?? stream
            sender = operation.machine
            session = operation.currentSession
        }
        do {
            return try operation.run()
        } catch {
            // What a resume needs is the stream's to say, whatever the protocol.
            guard case .stopped(let reason) = error.code else { throw error }
            throw TransferError.stopped(reason, "; " + resumeHint, tokenID: token.id)
        }
    }

    /// The connection is kept from one append to the next.
    private var session: (any TransportSession)?
    /// When the current append began, and at which offset: it ends after `appendBudget` bytes or 30 s, so
    /// the server's acknowledgement frees the spool and the token's checkpoint moves.
    private var requestBegan: (time: Double, offset: Int64) = (0, 0)

    /// Called by the operation when an append sent every durable byte: waits until more is durable and gives
    /// the new end with the stream's state to record, or nil to end the append (the stream paused for a
    /// moment, the append is large or old enough, or the stream ended: its last request says so).
    private func grow(sentUpTo offset: Int64) -> (end: Int64, stream: ResumeToken.StreamState)? {
        guard offset - requestBegan.offset < appendBudget(stream.spoolMax), Monotonic.now - requestBegan.time < 30 else { return nil }
        // Within the stall timeout: a wait here moves no byte.
        let idleLimit = min(1, Double(options.transport.stallTimeout) / 4)
        let waitingSince = Monotonic.now
        while !cancellation.isStopped {
            let (durable, end, ended, failed, ledger) = shared.withLock {
                ($0.spool.durable, $0.spool.end, $0.ended, $0.failure != nil, $0.durableLedger)
            }
            if failed { return nil }
            if durable > offset {
                adopt(durable: durable, ended: ended && durable == end, ledger: ledger)
                return (durable, stream)
            }
            let waited = Monotonic.now - waitingSince
            if ended && durable == end || waited >= idleLimit { return nil }
            synced.wait(seconds: idleLimit - waited, unless: cancellation)
        }
        return nil
    }

    /// Waits for a batch of durable bytes (or the end), then records them in the token.
    private func nextBatch() throws(TransferError) -> (durable: Int64, ended: Bool) {
        let acknowledged = sender.acknowledgedBytes
        let waitingSince = Monotonic.now
        let spoolMax = stream.spoolMax
        while true {
            let (end, durable, start, ended, failure) = shared.withLock {
                ($0.spool.end, $0.spool.durable, $0.spool.start, $0.ended, $0.failure)
            }
            if let failure { throw failure }
            if ended && durable == end { break }
            let fresh = durable - acknowledged
            let waited = Monotonic.now - waitingSince
            if fresh >= streamBatch || (fresh > 0 && (waited >= 1 || end - start >= spoolMax)) { break }
            if let reason = cancellation.reason { throw stopped(reason) }
            synced.wait(seconds: fresh > 0 ? 1 - waited : 1, unless: cancellation)
        }
        let (durable, ended, ledger) = shared.withLock { ($0.spool.durable, $0.ended && $0.spool.durable == $0.spool.end, $0.durableLedger) }
        adopt(durable: durable, ended: ended, ledger: ledger)
        try save()
        return (durable, ended)
    }

    /// Takes the spool's durable end (and the ledger that describes it) as the stream's state to record.
    private func adopt(durable: Int64, ended: Bool, ledger: StreamLedger) {
        stream.durable = durable
        stream.ended = ended
        stream.ledger = ledger
        upload.source.size = durable
    }

    /// The server holds everything below the machine's offset: the spool gives that space back, at block
    /// boundaries (a replay is checked against the ledger below them), and the reader may go on.
    private func dropAcknowledged() throws(TransferError) {
        let acknowledged = sender.acknowledgedBytes
        // The ledger as of the last sync: the reader's may already hold blocks past the durable end, which a
        // resume (the spool cut back to that end) would then hash twice.
        let (start, ledger) = shared.withLock { shared in
            (max(shared.spool.start, shared.durableLedger.dropPoint(acknowledged: acknowledged)), shared.durableLedger)
        }
        // The token first, the hole second: a kill in between must not leave a token whose spool start
        // lies below a punched hole (a replay would then compare the stream with zeros and call it different).
        stream.start = start
        stream.ledger = ledger
        try save()
        guard start > punchedTo else { return }
        let fd = shared.withLock { $0.spool.fileDescriptor }
        puncher.punch(fd: fd, path: spoolPath, from: punchedTo, to: start) { [self] error in
            shared.withLock { shared in
                if let error { shared.failure = shared.failure ?? error } else { shared.spool.markDropped(below: start) }
            }
            spaceFreed.ring()
        }
        punchedTo = start
    }

    /// Makes what the reader wrote durable, as fast as the disk allows: each sync takes everything that
    /// arrived during the one before. It runs beside the reader, which a sync never holds up.
    private func startSyncer() {
        runOnBackgroundThread("spool-sync") { [self] in
            while !cancellation.isStopped {
                let (end, durable, ended, failed, ledger, fd) = shared.withLock {
                    ($0.spool.end, $0.spool.durable, $0.ended, $0.failure != nil, $0.writer.ledger, $0.spool.fileDescriptor)
                }
                if failed {
                    synced.ring()
                    return
                }
                if end > durable {
                    do throws(TransferError) { try Spool.syncData(fd: fd, path: spoolPath) } catch {
                        shared.withLock { $0.failure = error }
                        synced.ring()
                        return
                    }
                    shared.withLock { shared in
                        shared.spool.markDurable(end)
                        shared.durableLedger = ledger
                    }
                    synced.ring()
                    continue
                }
                if ended {
                    synced.ring()
                    return
                }
                dataArrived.wait(seconds: 1, unless: cancellation)
            }
        }
    }

    private func startReader() {
        let spoolMax = stream.spoolMax
        InputPipe.widen(input)
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

/// The most one growing append carries: a quarter of the spool, at most 256 MiB, so acknowledged bytes
/// leave the spool before the reader has to wait for room.
private func appendBudget(_ spoolMax: Int64) -> Int64 { min(256 << 20, max(streamBatch, spoolMax / 4)) }
