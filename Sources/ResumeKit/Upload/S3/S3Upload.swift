import Crypto
import Dispatch
import FoundationEssentials
import Synchronization

/// Runs one upload to S3 to its end: a single signed PUT for a file of one part, otherwise a multipart
/// upload whose parts go `parallel` at a time over libcurl's multi interface, each with the checksum the
/// token names (``S3Checksum``: a CRC32C by default, computed by ISA-L; `Content-MD5`; or none).
///
/// The token is the checkpoint of parts: every part S3 acknowledged is written to it (crash-safely) at
/// once. A resume lists the parts S3 holds and keeps those whose size and ETag are what S3 answered when it
/// took them (or, for `Content-MD5` parts, the MD5 of the same bytes of the file); a part S3 finished
/// before a kill could record it is taken over when its listed checksum (or, where S3 lists none, its
/// ETag as an MD5) equals that of our bytes.
/// The arithmetic lives in ``MultipartPlan``; this class does the I/O, retries and bookkeeping.
final class S3Upload: @unchecked Sendable {
    /// Why a call could not go on; mapped to a ``TransferError`` at the end.
    private enum Stop: Error {
        case failed(TransferError)
        /// S3 no longer knows the upload id: start a new multipart upload.
        case noSuchUpload
        case stopped
    }

    private let state: Mutex<ResumeToken>
    private let store: TokenStore
    private var source: any UploadSource
    private let target: S3Target
    private let call: S3Call
    private let transport: any HTTPTransport
    private let options: TransferOptions
    private let parallel: Int
    private let cancellation: Cancellation
    private let emit: EventHandler
    /// The upload's length; for a stream whose end was not read yet, the bytes the spool made durable.
    private var size: Int64
    private let partSize: Int64
    /// What each part carries for S3 to check.
    private let checksum: S3Checksum
    /// Bytes in flight per part number, for progress.
    private let inFlight = Mutex<[Int: Int64]>([:])

    init(
        token: ResumeToken, source: any UploadSource, target: S3Target, answers: any S3Answers, store: TokenStore,
        transport: any HTTPTransport, options: TransferOptions, parallel: Int, cancellation: Cancellation, events: @escaping EventHandler
    ) {
        state = Mutex(token)
        self.store = store
        self.source = source
        self.target = target
        var signed = options
        signed.transport = target.signing(options.transport)
        if signed.transport.maxSendRate > 0 {
            // --limit-rate is for the whole upload, not for each connection.
            signed.transport.maxSendRate = max(1, signed.transport.maxSendRate / Int64(max(1, parallel)))
        }
        // S3 answers a part with a head and no body: libcurl's default receive buffer is plenty.
        signed.transport.receiveBufferSize = 16 * 1024
        // Parts go several at once: 256 KiB a connection sends as fast over loopback as 512 and keeps
        // the upload within 32 MiB.
        signed.transport.uploadBufferSize = 256 * 1024
        self.options = signed
        call = S3Call(answers: answers, settings: signed.transport)
        self.transport = transport
        self.parallel = max(1, parallel)
        self.cancellation = cancellation
        self.emit = events
        size = token.upload!.source.size
        partSize = token.upload!.s3!.partSize ?? MultipartPlan.defaultPartSize
        checksum = token.upload!.s3!.checksum ?? .md5
    }

    private var token: ResumeToken { state.withLock { $0 } }
    private var s3: ResumeToken.S3State { token.upload!.s3! }
    private var id: String { token.id }

    func run() throws(TransferError) -> UploadResult {
        let parts = MultipartPlan.partCount(fileSize: size, partSize: partSize)
        do {
            if parts == 1 && s3.uploadId == nil {
                emit(.started(kind: .upload, url: token.url, path: source.path, offset: 0, total: size))
                try putWhole()
            } else {
                try multipart(partCount: parts)
            }
        } catch {
            throw self.failure(error)
        }
        return try finish()
    }

    // MARK: Streams

    /// A stream's token as the stream last left it (spool bounds, ledger), with the parts this upload sent.
    var currentToken: ResumeToken { token }

    /// Bytes from the stream's start that S3 holds in consecutive parts: what the spool may give back.
    var acknowledgedPrefix: Int64 {
        var next = 1
        for part in (s3.parts ?? []).sorted(by: { $0.number < $1.number }) where part.number == next { next += 1 }
        return min(size, Int64(next - 1) * partSize)
    }

    /// One step of a stream upload (`upload - s3://…`): `token` carries the spool's new bounds, `source` the
    /// spool. Sends every whole part below `durable` (and, once the stream `ended`, the last one), then
    /// completes. Returns nil while the stream goes on.
    func sendStream(_ token: ResumeToken, source: any UploadSource, ended: Bool) throws(TransferError) -> UploadResult? {
        let durable = token.upload!.source.size
        state.withLock { $0.upload!.stream = token.upload!.stream; $0.upload!.source.size = durable }
        self.source = source
        size = durable
        let whole = ended ? MultipartPlan.partCount(fileSize: durable, partSize: partSize) : Int(durable / partSize)
        guard whole <= Int(MultipartPlan.maximumParts) else {
            throw TransferError(.failed, "the stream outgrew S3's 10,000 parts of \(partSize >> 20) MiB; give a larger --part-size",
                tokenID: nil)
        }
        do {
            if s3.uploadId == nil {
                try create()
                emit(.started(kind: .upload, url: token.url, path: "-", offset: 0, total: nil))
            } else if !reconciled {
                try reconcile(partCount: whole)
            }
            reconciled = true
            if whole > 0 { try sendParts(MultipartPlan.missing(partCount: whole, done: s3.parts ?? [])) }
            guard ended else { return nil }
            try complete()
        } catch {
            throw self.failure(error)
        }
        return try finish()
    }

    /// The parts S3 listed were checked once this run (a resume's ListParts).
    private var reconciled = false

    // MARK: Single PUT

    private func putWhole() throws(Stop) {
        let sum = try digest(BodyRange(offset: 0, length: size))
        let session = transport.makeSession()
        var retrier = Retrier(options, cancellation: cancellation, events: emit)
        var pacer = ProgressPacer()
        let answer = try retrying("PUT \(s3.address)", retrier: &retrier) { () -> S3Reply in
            call.send(
                session, method: "PUT", url: target.url(), headers: objectHeaders(partHeaders(sum)),
                body: RequestBody(fileDescriptor: source.fd, offset: 0, length: size), cancellation: cancellation
            ) { sent in
                if let rate = pacer.tick(bytes: sent) { self.emit(.progress(bytes: sent, total: self.size, rate: rate)) }
            }
        }
        switch answer {
        case .ok(let head, _): try checkEcho(head, sum, what: "PUT \(s3.address)")
        case .refused(let status, let error): throw .failed(TransferError(.failed, S3Call.failure(status, error, "PUT \(s3.address)")))
        }
    }

    // MARK: Multipart

    private func multipart(partCount: Int) throws(Stop) {
        var restarts = 0
        var started = false
        while true {
            do {
                if s3.uploadId == nil {
                    try create()
                } else {
                    try reconcile(partCount: partCount)
                }
                if !started {
                    started = true
                    emit(.started(kind: .upload, url: token.url, path: source.path, offset: doneBytes, total: size))
                }
                try sendParts(MultipartPlan.missing(partCount: partCount, done: s3.parts ?? []))
                try complete()
                return
            } catch .noSuchUpload {
                restarts += 1
                guard restarts <= 3 else {
                    throw .failed(TransferError(.failed, "S3 lost the multipart upload of \(s3.address) again and again"))
                }
                emit(.restarted(reason: "S3 no longer knows upload \(s3.uploadId ?? "?") (NoSuchUpload); starting a new multipart upload"))
                try update { $0.upload!.s3!.uploadId = nil; $0.upload!.s3!.parts = []; $0.upload!.acknowledgedBytes = 0 }
            }
        }
    }

    /// CreateMultipartUpload; the upload id goes into the token before any part is sent.
    private func create() throws(Stop) {
        var retrier = Retrier(options, cancellation: cancellation, events: emit)
        let session = transport.makeSession()
        var headers = objectHeaders(["Content-Type": "application/octet-stream", "x-amz-content-sha256": SigV4Signer.emptyPayloadHash])
        headers.set("Content-Length", "0")
        // Declared here, the algorithm binds every part; S3 then keeps a checksum of the parts' checksums.
        if let name = checksum.flexibleName { headers.set("x-amz-checksum-algorithm", name) }
        let answer = try retrying("CreateMultipartUpload", retrier: &retrier) { () -> S3Reply in
            call.send(session, method: "POST", url: target.url(query: [("uploads", "")]), headers: headers, cancellation: cancellation)
        }
        switch answer {
        case .ok(_, let body):
            let uploadID: String
            do { uploadID = try call.answers.uploadID(body) } catch { throw .failed(error) }
            try update { $0.upload!.s3!.uploadId = uploadID; $0.upload!.s3!.parts = [] }
        case .refused(let status, let error):
            throw .failed(TransferError(.failed, S3Call.failure(status, error, "cannot start the upload to \(s3.address)")))
        }
    }

    /// ListParts (every page), then keep what is really there: recorded parts whose size and ETag match,
    /// and parts finished before the token could say so whose ETag equals the MD5 of our bytes.
    private func reconcile(partCount: Int) throws(Stop) {
        let uploadID = s3.uploadId!
        var listed: [ListedPart] = []
        var marker: String?
        var retrier = Retrier(options, cancellation: cancellation, events: emit)
        let session = transport.makeSession()
        repeat {
            var query = [("uploadId", uploadID)]
            if let marker { query.append(("part-number-marker", marker)) }
            let answer = try retrying("ListParts", retrier: &retrier) { () -> S3Reply in
                call.send(session, method: "GET", url: target.url(query: query), cancellation: cancellation)
            }
            switch answer {
            case .ok(_, let body):
                do {
                    let page = try call.answers.parts(body)
                    listed += page.parts
                    marker = page.nextMarker
                } catch { throw .failed(error) }
            case .refused(_, let error) where error?.code == "NoSuchUpload":
                throw .noSuchUpload
            case .refused(let status, let error):
                throw .failed(TransferError(.failed, S3Call.failure(status, error, "cannot list the parts of \(s3.address)")))
            }
        } while marker != nil

        let recorded = s3.parts ?? []
        var kept = MultipartPlan.trusted(recorded: recorded, listed: listed)
        for part in recorded where !kept.contains(part) {
            emit(.note("part \(part.number) on S3 is not the one this upload sent; sending it again"))
        }
        let known = Set(recorded.map(\.number))
        for part in listed where !known.contains(part.number) && part.number >= 1 && part.number <= partCount {
            let range = MultipartPlan.range(ofPart: part.number, fileSize: size, partSize: partSize)
            guard part.size == Int64(range.count) else { continue }
            let body = BodyRange(offset: range.lowerBound, length: Int64(range.count))
            if let name = checksum.flexibleName, let listedSum = part.checksums[name] {
                let sum = try digest(body)
                if let sum, Data(sum).base64EncodedString() == listedSum {
                    kept.append(S3Part(number: part.number, size: part.size, checksum: listedSum, etag: part.etag))
                }
                continue
            }
            // No checksum listed (a server that keeps none, or Content-MD5 parts): S3's ETag of a part is its MD5.
            let md5: [UInt8]
            do { md5 = try source.digestBytes(body, .md5) } catch { throw .failed(error) }
            guard MultipartPlan.unquoted(part.etag).lowercased() == md5.hex else { continue }
            let sum = checksum.flexibleName == nil ? nil : try digest(body)
            kept.append(S3Part(number: part.number, size: part.size, md5: checksum == .md5 ? md5.hex : nil,
                checksum: sum.map { Data($0).base64EncodedString() }, etag: part.etag))
        }
        kept.sort { $0.number < $1.number }
        try update { $0.upload!.s3!.parts = kept; $0.upload!.acknowledgedBytes = kept.reduce(0) { $0 + $1.size } }
    }

    private var doneBytes: Int64 { (s3.parts ?? []).reduce(0) { $0 + $1.size } }

    /// Sends `numbers`, `parallel` at a time, each on its own connection of the multi handle.
    private func sendParts(_ numbers: [Int]) throws(Stop) {
        guard !numbers.isEmpty else { return }
        let uploadID = s3.uploadId!
        let queue = Mutex(numbers[...])
        let failure = Mutex<Stop?>(nil)
        let stop = Cancellation()
        let ended = DispatchSemaphore(value: 0)
        let workers = min(parallel, numbers.count)
        for _ in 0..<workers {
            runOnBackgroundThread("s3-part") {
                defer { ended.signal() }
                let session = self.transport.makeSession()
                var retrier = Retrier(self.options, cancellation: stop, events: self.emit)
                while !stop.isStopped, let number = queue.withLock({ $0.popFirst() }) {
                    do throws(Stop) {
                        try self.sendPart(number, uploadID: uploadID, session: session, retrier: &retrier, stop: stop)
                    } catch {
                        if case .stopped = error { break }
                        failure.withLock { if $0 == nil { $0 = error } }
                        stop.stop(.pause)
                    }
                }
            }
        }
        var pacer = ProgressPacer(bytes: doneBytes)
        var running = workers
        while running > 0 {
            if let reason = cancellation.reason { stop.stop(reason) }
            if ended.wait(timeout: .now() + .milliseconds(100)) == .success {
                running -= 1
                continue
            }
            let bytes = doneBytes + inFlight.withLock { $0.values.reduce(0, +) }
            if let rate = pacer.tick(bytes: bytes) { emit(.progress(bytes: bytes, total: size, rate: rate)) }
        }
        if cancellation.isStopped { throw .stopped }
        if let first = failure.withLock({ $0 }) { throw first }
    }

    private func sendPart(_ number: Int, uploadID: String, session: any TransportSession, retrier: inout Retrier, stop: Cancellation)
        throws(Stop)
    {
        let range = MultipartPlan.range(ofPart: number, fileSize: size, partSize: partSize)
        let body = BodyRange(offset: range.lowerBound, length: Int64(range.count))
        let sum = try digest(body)
        defer { inFlight.withLock { $0[number] = nil } }
        let answer = try retrying("part \(number)", retrier: &retrier) { () -> S3Reply in
            call.send(
                session, method: "PUT", url: target.url(query: [("partNumber", String(number)), ("uploadId", uploadID)]),
                headers: partHeaders(sum), body: RequestBody(fileDescriptor: source.fd, offset: body.offset, length: body.length),
                cancellation: stop
            ) { sent in self.inFlight.withLock { $0[number] = sent } }
        }
        switch answer {
        case .ok(let head, _):
            guard let etag = head.headers["ETag"] else {
                throw .failed(TransferError(.failed, "S3 acknowledged part \(number) without an ETag"))
            }
            try checkEcho(head, sum, what: "part \(number) of \(s3.address)")
            let part = S3Part(number: number, size: body.length, md5: checksum == .md5 ? sum?.hex : nil,
                checksum: checksum.flexibleName == nil ? nil : sum.map { Data($0).base64EncodedString() }, etag: etag)
            try update { token in
                token.upload!.s3!.parts = ((token.upload!.s3!.parts ?? []).filter { $0.number != number } + [part]).sorted { $0.number < $1.number }
                token.upload!.acknowledgedBytes = token.upload!.s3!.parts!.reduce(0) { $0 + $1.size }
            }
        case .refused(_, let error) where error?.code == "NoSuchUpload":
            throw .noSuchUpload
        case .refused(let status, let error):
            throw .failed(TransferError(.failed, S3Call.failure(status, error, "part \(number) of \(s3.address)")))
        }
    }

    /// CompleteMultipartUpload with the parts in ascending order; S3's answer (an `<Error>` even with a 200)
    /// is read, and the object's ETag must be the one the parts' MD5s give.
    private func complete() throws(Stop) {
        let parts = s3.parts ?? []
        let uploadID = s3.uploadId!
        let document = Array(MultipartPlan.completionBody(parts, checksum: checksum.flexibleName).utf8)
        let expected = MultipartPlan.expectedETag(parts)
        let headers: HeaderFields = ["Content-Type": "application/xml", "x-amz-content-sha256": SHA256Hex.of(document)]
        var retrier = Retrier(options, cancellation: cancellation, events: emit)
        let session = transport.makeSession()
        var attempts = 0
        do {
            let answer = try retrying("CompleteMultipartUpload", retrier: &retrier) { () -> S3Reply in
                attempts += 1
                switch call.send(session, method: "POST", url: target.url(query: [("uploadId", uploadID)]), headers: headers,
                    body: RequestBody(bytes: document), cancellation: cancellation)
                {
                case .ok(let head, let body):
                    // A 200 whose body is an <Error>: S3 failed while it assembled the object.
                    if let error = call.answers.error(body) { return .refused(status: 200, error: error, retryAfter: nil) }
                    return .ok(head, body)
                case let other:
                    return other
                }
            }
            switch answer {
            case .ok(_, let body):
                let etag: String
                do { etag = try call.answers.completedETag(body) } catch { throw .failed(error) }
                guard expected == nil || etag == expected else {
                    throw .failed(TransferError(.checksumMismatch,
                        "S3 assembled \(s3.address) with ETag \(etag), not the \(expected ?? "") this file's parts give"))
                }
                return
            case .refused(_, let error) where error?.code == "NoSuchUpload":
                // After a lost answer the first Complete may have worked: then the object is there, whole.
                if attempts > 1, let expected, try objectETag() == expected { return }
                throw .noSuchUpload
            case .refused(_, let error) where error?.code == "InvalidPart":
                // A part is not what S3 listed a moment ago: list again and send what is missing.
                try update { $0.upload!.s3!.parts = [] }
                throw .failed(TransferError(.failed, S3Call.failure(400, error, "S3 refused the parts of \(s3.address)")))
            case .refused(let status, let error):
                throw .failed(TransferError(.failed, S3Call.failure(status, error, "cannot complete \(s3.address)")))
            }
        }
    }

    /// The ETag of the object now at the key (HEAD), nil when there is none.
    private func objectETag() throws(Stop) -> String? {
        var retrier = Retrier(options, cancellation: cancellation, events: emit)
        let session = transport.makeSession()
        let answer = try retrying("HEAD \(s3.address)", retrier: &retrier) { () -> S3Reply in
            call.send(session, method: "HEAD", url: target.url(), cancellation: cancellation)
        }
        if case .ok(let head, _) = answer { return head.headers["ETag"] }
        return nil
    }

    // MARK: Shared

    private enum Answer {
        case ok(ResponseHead, [UInt8])
        case refused(Int, S3ErrorBody?)
    }

    /// Runs `send` until S3 gives a final answer: throttling, server errors and lost connections go
    /// through the retrier (the same rules as every transfer); other refusals are returned.
    private func retrying(_ what: String, retrier: inout Retrier, _ send: () -> S3Reply) throws(Stop) -> Answer {
        while true {
            let fault: Fault
            switch send() {
            case .ok(let head, let body):
                return .ok(head, body)
            case .refused(let status, let error, let after) where S3Call.isTransient(status: status, error: error):
                fault = .status(status, retryAfter: after, message: S3Call.failure(status, error, what))
            case .refused(let status, let error, _):
                return .refused(status, error)
            case .lost(let lost):
                fault = lost.withMessage("\(what): \(lost.message)")
            case .stopped:
                throw .stopped
            }
            // Before S3 gave an upload id, a name that does not resolve is a typo, not a network gone.
            switch retrier.after(fault, fresh: s3.uploadId == nil, progressMade: false) {
            case .again: continue
            case .stopped: throw .stopped
            case .exhausted(let message): throw .failed(TransferError(.retriesExhausted, message))
            case .failed(let message): throw .failed(TransferError(.failed, message))
            }
        }
    }

    /// The body is not hashed for the signature (that would read every part again); the part's checksum
    /// header is signed and S3 checks the bytes against it. `x-amz-sdk-checksum-algorithm` is what AWS's SDKs
    /// send beside a flexible checksum (some S3-compatible servers look for the checksum by it).
    private func partHeaders(_ sum: [UInt8]?) -> HeaderFields {
        var headers: HeaderFields = ["x-amz-content-sha256": SigV4Signer.unsignedPayload, "Content-Type": "application/octet-stream",
            "Expect": "100-continue"]
        guard let sum else { return headers }
        if let name = checksum.flexibleName {
            headers.set("x-amz-checksum-" + name.lowercased(), Data(sum).base64EncodedString())
            headers.set("x-amz-sdk-checksum-algorithm", name)
        } else {
            headers.set("Content-MD5", Data(sum).base64EncodedString())
        }
        return headers
    }

    /// A flexible checksum S3 echoes must be the one sent: S3 checked the bytes against it.
    private func checkEcho(_ head: ResponseHead, _ sum: [UInt8]?, what: String) throws(Stop) {
        guard let name = checksum.flexibleName, let sum, let echoed = head.headers["x-amz-checksum-" + name.lowercased()] else { return }
        let sent = Data(sum).base64EncodedString()
        guard echoed == sent else {
            throw .failed(TransferError(.checksumMismatch, "\(what): S3 answered \(name) \(echoed), not the \(sent) sent"))
        }
    }

    /// The user's `-H` headers (`Content-Type`, `x-amz-storage-class`, `x-amz-meta-*` …) go with the request
    /// that creates the object: the single PUT, or CreateMultipartUpload.
    private func objectHeaders(_ base: HeaderFields) -> HeaderFields {
        var headers = base
        for field in ((try? HeaderLines.parse(token.headers)) ?? [:]).fields { headers.set(field.name, field.value) }
        return headers
    }

    /// The part's checksum under the token's choice, nil for `none`.
    private func digest(_ range: BodyRange) throws(Stop) -> [UInt8]? {
        guard let algorithm = checksum.digest else { return nil }
        do { return try source.digestBytes(range, algorithm) } catch { throw .failed(error) }
    }

    /// Changes the token and writes it before anything else happens.
    private func update(_ change: (inout ResumeToken) -> Void) throws(Stop) {
        let store = self.store
        let saved: Result<Void, TransferError> = state.withLock { token in
            change(&token)
            do { try store.save(token) } catch { return .failure(TransferError(.localIO, "\(error)")) }
            return .success(())
        }
        if case .failure(let error) = saved { throw .failed(error) }
    }

    private func failure(_ stop: Stop) -> TransferError {
        let keep = s3.uploadId != nil ? id : nil
        switch stop {
        case .failed(var error):
            if error.code == .retriesExhausted || error.code == .localIO || error.code == .checksumMismatch || keep != nil {
                error.tokenID = id
            }
            return error
        case .noSuchUpload:
            return TransferError(.failed, "S3 no longer knows the upload of \(s3.address)", tokenID: id)
        case .stopped:
            let reason = cancellation.reason ?? .pause
            emit(.paused(offset: doneBytes))
            return .stopped(reason, "with \(s3.parts?.count ?? 0) parts on S3; resume sends the rest", tokenID: id)
        }
    }

    private func finish() throws(TransferError) -> UploadResult {
        let token = self.token
        let digest = options.computeSHA256 ? try source.sha256() : nil
        let address = s3.address
        try? ResultStore(directory: store.directory).save(TransferRecord(
            id: token.id, kind: .upload, outcome: .done, exit: 0, resumable: false, url: address, path: source.path,
            bytes: size, sha256: digest))
        store.remove(id: token.id)
        emit(.completed(location: address, bytes: size, sha256: digest))
        return UploadResult(url: address, bytes: size, sha256: digest)
    }
}

enum SHA256Hex {
    static func of(_ bytes: [UInt8]) -> String { SHA256.hash(data: bytes).hex }
}
