import Glibc

/// A download whose body goes to a pipe (`-o -`): a ``Fetch`` whose output cannot take back what it wrote.
/// It resumes a cut from the count of bytes written, the overlap checked against a ring of the last ones.
/// There is no token: once this process is gone, only the reader knows what it received. A file that
/// changed on the server fails (exit 65) rather than splice two versions into the pipe.
final class StreamDownload: FetchOutput {
    private let output: Int32
    private let session: any TransportSession
    private let options: TransferOptions
    private let cancellation: Cancellation
    private let emit: EventHandler
    private let expectedSHA256: String?
    private var fetch: Fetch!

    private var written: Int64 = 0
    private var ring = TailRing(capacity: Int(DownloadStateMachine.overlap))

    init(
        url: String, headers: HeaderFields, output: Int32, session: any TransportSession, options: TransferOptions,
        expectedSHA256: String?, cancellation: Cancellation, events: @escaping EventHandler
    ) {
        self.output = output
        self.session = session
        self.options = options
        self.expectedSHA256 = expectedSHA256?.lowercased()
        self.cancellation = cancellation
        self.emit = events
        // Hashed only with `--checksum` or a `Repr-Digest` to meet: about 0.8 s of CPU a GiB, and the reader may hash
        // anyway.
        fetch = Fetch(
            url: url, headers: headers, output: self, onChange: .fail, hashes: expectedSHA256 != nil,
            stallTimeout: options.transport.stallTimeout, path: "-", events: events)
    }

    func run() throws(TransferError) -> DownloadResult {
        return try Retrier.run(
            options, cancellation: cancellation, events: emit,
            fresh: { RetryRules.isFresh(held: written, known: fetch.machine.resource != nil) }, stopped: "",
            explain: explain
        ) { () throws(TransferError) in
            if let reason = cancellation.reason { throw stopped(reason) }
            let request: TransferRequest
            do { request = try fetch.request() } catch {
                throw TransferError(
                    .sourceChanged,
                    "the server gave no strong validator, so a cut download to stdout cannot go on: \(written) bytes "
                        + "were written"
                )
            }
            let verdict = try fetch.perform(
                request, on: session, settings: options.transport, cancellation: cancellation)
            return try fetch.step(verdict, finish: finish) { failure, _ throws(TransferError) in
                switch failure {
                case .status(let status, let reason): throw TransferError.refused(status, reason, url: fetch.url)
                case .changed(let reason):
                    throw TransferError(
                        .sourceChanged, "\(reason); \(written) bytes already went to stdout and cannot be taken back")
                }
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
        case .retriesExhausted:
            return TransferError(.retriesExhausted, "\(error.message), \(written) bytes written to stdout")
        default: return error
        }
    }

    private func finish() throws(TransferError) -> DownloadResult {
        let served = fetch.machine.resource?.reprDigestSHA256.flatMap { $0.count == 32 ? $0.hex : nil }
        let expected = expectedSHA256 ?? served
        var digest: String?
        if expected != nil {
            do { digest = try fetch.digest() } catch {
                throw TransferError(.localIO, "hashing the data written to stdout failed")
            }
        }
        if let expected, let digest, digest != expected {
            throw TransferError(.checksumMismatch, "the data written to stdout has sha256 \(digest), not \(expected)")
        }
        emit(.completed(location: "-", bytes: written, sha256: digest))
        return DownloadResult(path: "-", bytes: written, sha256: digest)
    }

    // MARK: FetchOutput

    var held: Int64 { written }
    var retained: Int64 { Int64(ring.count) }
    var rewinds: Bool { false }

    func heldBytes(from offset: Int64) throws(TransferError) -> [UInt8] { ring.suffix(Int(written - offset)) }

    func write(_ body: UnsafeRawBufferPointer) throws(TransferError) {
        guard writeAll(output, body) else {
            throw errno == EPIPE
                ? TransferError(.outputClosed, "the reader of stdout went away after \(written) bytes")
                : TransferError(.localIO, "writing to stdout failed: \(String(cString: strerror(errno)))")
        }
        ring.append(body)
        written += Int64(body.count)
    }
}
