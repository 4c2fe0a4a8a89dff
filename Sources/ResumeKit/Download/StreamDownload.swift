import Glibc

/// A download whose body goes to a pipe (`-o -`): what was written cannot be taken back, so it counts the
/// bytes written and resumes a cut with `Range` + `If-Range` from that count, first comparing the 64 KiB
/// before it with a ring of the last bytes written (the overlap check of file downloads, without a file).
///
/// There is no token: once this process is gone, only the reader knows what it received. A file that
/// changed on the server fails (exit 65) rather than splice two versions into the pipe. A reader that
/// goes away ends the transfer at once with ``TransferError/Code/outputClosed``.
final class StreamDownload: ExchangeDelegate {
    private let url: String
    /// Already without `Accept-Encoding` (`HeaderLines.forDownload`).
    private let headers: HeaderFields
    private let output: Int32
    private let session: any TransportSession
    private let options: TransferOptions
    private let cancellation: Cancellation
    private let emit: EventHandler
    private let expectedSHA256: String?
    private var machine: DownloadStateMachine

    /// Bytes written to the output.
    private var written: Int64 = 0
    private var ring = TailRing(capacity: Int(DownloadStateMachine.overlap))
    /// Only with `--checksum`: hashing costs about 0.8 s of CPU a GiB, and the reader may hash anyway.
    private var hasher: MessageDigest?

    // The exchange in flight.
    private var requestedOffset: Int64 = 0
    /// Body bytes of this response still to drop (before the overlap) or to compare (the overlap).
    private var skip: Int64 = 0
    private var overlap = OverlapCheck.none
    private var decision: DownloadStateMachine.Decision?
    private var failure: TransferError?
    private var receivedThisAttempt: Int64 = 0
    private var started = false
    private var pacer = ProgressPacer()

    init(
        url: String, headers: HeaderFields, output: Int32, session: any TransportSession, options: TransferOptions,
        expectedSHA256: String?, cancellation: Cancellation, events: @escaping EventHandler
    ) {
        self.url = url
        self.headers = headers
        self.output = output
        self.session = session
        self.options = options
        self.expectedSHA256 = expectedSHA256?.lowercased()
        self.cancellation = cancellation
        self.emit = events
        machine = DownloadStateMachine(onChange: .fail)
        hasher = expectedSHA256 == nil ? nil : MessageDigest(.sha256)
    }

    func run() throws(TransferError) -> DownloadResult {
        return try Retrier.run(options, cancellation: cancellation, events: emit, fresh: { RetryRules.isFresh(held: written, known: machine.resource != nil) }, stopped: "", explain: explain) { () throws(TransferError) in
            if let reason = cancellation.reason { throw stopped(reason) }
            guard case .fetch(let offset, let range) = machine.plan(committed: written) else {
                throw TransferError(.sourceChanged, "the server gave no strong validator, so a cut download to stdout cannot go on: \(written) bytes were written")
            }
            var request = headers
            for field in range.fields { request.set(field.name, field.value) }
            requestedOffset = offset
            decision = nil
            failure = nil
            receivedThisAttempt = 0
            let result = session.perform(
                TransferRequest(method: "GET", url: url, headers: request, followRedirects: true), settings: options.transport,
                cancellation: cancellation, delegate: self)
            if let failure { throw failure }
            switch machine.verdict(result.outcome, decision, held: written, stallTimeout: options.transport.stallTimeout) {
            case .done: return .done(try finish())
            case .again: return .next
            case .fault(let fault): return .failed(fault, progressMade: receivedThisAttempt > 0)
            case .fail(.status(let status, let reason)): throw TransferError.refused(status, reason, url: url)
            case .fail(.changed(let reason)), .refetchFromZero(let reason): throw changed(reason)
            }
        }
    }

    /// A stop: said once, with what went to stdout.
    private func stopped(_ reason: StopReason) -> TransferError {
        emit(.paused(offset: written))
        return TransferError.stopped(reason, "after \(written) bytes to stdout; a pipe cannot be resumed", tokenID: nil)
    }

    /// The attempt loop's giving up, with what went to stdout.
    private func explain(_ error: TransferError) -> TransferError {
        switch error.code {
        case .stopped(let reason): return stopped(reason)
        case .retriesExhausted: return TransferError(.retriesExhausted, "\(error.message), \(written) bytes written to stdout")
        default: return error
        }
    }

    private func changed(_ reason: String) -> TransferError {
        TransferError(.sourceChanged, "\(reason); \(written) bytes already went to stdout and cannot be taken back")
    }

    private func finish() throws(TransferError) -> DownloadResult {
        let digest = hasher?.finalize().hex
        if let expectedSHA256, let digest, digest != expectedSHA256 {
            throw TransferError(.checksumMismatch, "the data written to stdout has sha256 \(digest), not \(expectedSHA256)")
        }
        emit(.completed(location: "-", bytes: written, sha256: digest))
        return DownloadResult(path: "-", bytes: written, sha256: digest)
    }

    // MARK: ExchangeDelegate

    func exchange(head: ResponseHead, effectiveURL: String) -> Bool {
        let before = machine.resource
        let d = machine.evaluate(head, requestedOffset: requestedOffset)
        decision = d
        guard case .write(let from, let restarted) = d else { return false }
        if restarted != nil, written > 0 {
            let now = machine.resource
            guard before?.validator != nil, now?.etag == before?.etag, now?.lastModified == before?.lastModified else {
                failure = changed(restarted!)
                return false
            }
            // The same file, sent whole (the range was ignored): drop what the reader already has.
        }
        let start = min(from, written)
        let overlapFrom = max(start, written - Int64(ring.count))
        skip = overlapFrom - start
        overlap = OverlapCheck(held: ring.suffix(Int(written - overlapFrom)), from: overlapFrom)
        if !started {
            started = true
            emit(.started(kind: .download, url: url, path: "-", offset: 0, total: machine.resource?.totalBytes))
        }
        return true
    }

    func exchange(body received: UnsafeRawBufferPointer) -> Bool {
        var body = received
        if skip > 0 {
            let drop = Int(min(Int64(body.count), skip))
            skip -= Int64(drop)
            body = UnsafeRawBufferPointer(rebasing: body[drop...])
        }
        switch overlap.consume(body) {
        case .differs(let offset):
            failure = changed(DownloadStateMachine.overlapReason(at: offset))
            return false
        case .matched(let rest):
            body = rest
        }
        guard !body.isEmpty else { return true }
        guard writeAll(output, body) else {
            failure = errno == EPIPE
                ? TransferError(.outputClosed, "the reader of stdout went away after \(written) bytes")
                : TransferError(.localIO, "writing to stdout failed: \(String(cString: strerror(errno)))")
            return false
        }
        hasher?.update(bufferPointer: body)
        ring.append(body)
        written += Int64(body.count)
        receivedThisAttempt += Int64(body.count)
        if let rate = pacer.tick(bytes: written) { emit(.progress(bytes: written, total: machine.resource?.totalBytes, rate: rate)) }
        return true
    }
}
