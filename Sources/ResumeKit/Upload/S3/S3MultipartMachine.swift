import FoundationEssentials

/// An upload to S3 as a pure machine (no I/O, no clock), run by `UploadOperation` like every protocol: a
/// single signed PUT for a file of one part, otherwise CreateMultipartUpload, the parts `parallel` at a
/// time (each with the checksum the token names, ``S3Checksum``), CompleteMultipartUpload.
///
/// The token is the checkpoint of parts: each part S3 acknowledged is recorded at once. A resume lists the
/// parts S3 holds and keeps those whose size and ETag are what S3 answered when it took them; a listed part
/// the token never recorded (a kill between S3's answer and the token) is taken over when its listed
/// checksum, or where S3 lists none its ETag as an MD5, is that of our bytes (``digests(for:)``).
/// The arithmetic and the XML live in ``MultipartPlan`` and ``S3Answers``.
public struct S3MultipartMachine: StreamingUploadMachine {
    public enum Plan: Sendable, Equatable {
        /// The whole file in one PUT (a file of one part, never a stream).
        case put
        case create
        /// One page of ListParts.
        case list(marker: String?)
        /// A listed part the token did not record: kept when our bytes give its checksum.
        case verify(ListedPart)
        case part(Int)
        case complete
        /// NoSuchUpload answered a repeated Complete: the first may have worked (HEAD the object).
        case head
    }

    private enum Phase: Sendable, Equatable {
        /// Nothing asked of S3 yet this run.
        case start
        case listing(marker: String?, listed: [ListedPart])
        case verifying([ListedPart])
        case sending
        case checking
    }

    /// The XML reader; it holds no state, so it takes no part in equality.
    private struct Reader: Sendable, Equatable {
        let answers: any S3Answers
        static func == (_: Reader, _: Reader) -> Bool { true }
    }

    private let endpoint: S3Endpoint
    private let location: S3Location
    private let reader: Reader
    private let partSize: Int64
    private let checksum: S3Checksum
    private let parallel: Int
    /// The user's `-H` headers, for the request that creates the object.
    private let objectFields: HeaderFields
    private let isStream: Bool
    /// Bytes of the source known so far (a stream's durable bytes), and whether that is all of it.
    private var known: Int64
    private var final: Bool
    private var uploadID: String?
    private var parts: [S3Part]
    private var phase = Phase.start
    private var completeAttempts = 0

    public init(
        state: ResumeToken.S3State, size: Int64, final: Bool = true, stream: Bool = false, headers: HeaderFields = [:],
        endpoint: S3Endpoint, answers: any S3Answers
    ) {
        self.endpoint = endpoint
        location = S3Location(bucket: state.bucket, key: state.key)
        reader = Reader(answers: answers)
        partSize = state.partSize ?? MultipartPlan.defaultPartSize
        checksum = state.checksum ?? .md5
        parallel = max(1, state.parallel ?? S3Options().parallel)
        objectFields = headers
        isStream = stream
        known = size
        self.final = final
        uploadID = state.uploadId
        parts = state.parts ?? []
    }

    private var address: String { location.description }

    /// Parts that can be sent: every one once the length is final, else only whole ones.
    private var partCount: Int {
        final ? MultipartPlan.partCount(fileSize: known, partSize: partSize) : Int(known / partSize)
    }

    /// The bytes this machine can send now: a stream's tail waits for its end.
    public var size: Int64 { final ? known : Int64(partCount) * partSize }

    public mutating func extend(to newSize: Int64, final: Bool) throws(TransferError) {
        known = newSize
        self.final = final
        guard partCount <= Int(MultipartPlan.maximumParts) else {
            throw TransferError(
                .failed, "the stream outgrew S3's 10,000 parts of \(partSize >> 20) MiB; give a larger --part-size")
        }
    }

    // MARK: Plans

    public func plan() -> Plan { plans(besides: []).first ?? .complete }

    public func plans(besides running: [Plan]) -> [Plan] {
        switch phase {
        case _ where phase != .sending && !running.isEmpty: return []
        case .start where uploadID == nil: return !isStream && partCount == 1 ? [.put] : [.create]
        case .start: return [.list(marker: nil)]
        case .listing(let marker, _): return [.list(marker: marker)]
        case .verifying(let queue): return [.verify(queue[0])]
        case .checking: return [.head]
        case .sending:
            let busy = Set(running.compactMap { plan -> Int? in if case .part(let n) = plan { n } else { nil } })
            let missing =
                partCount == 0
                ? [] : MultipartPlan.missing(partCount: partCount, done: parts).filter { !busy.contains($0) }
            if missing.isEmpty { return busy.isEmpty && final ? [.complete] : [] }
            return missing.prefix(max(0, parallel - busy.count)).map(Plan.part)
        }
    }

    public func exchange(for plan: Plan) -> UploadExchange? {
        switch plan {
        case .put:
            var headers = partHeaders(length: known)
            for field in objectFields.fields { headers.set(field.name, field.value) }
            return UploadExchange(
                method: "PUT", url: url(), headers: headers, body: BodyRange(offset: 0, length: known),
                checksum: bodyChecksum, userHeaders: false)
        case .create:
            var headers: HeaderFields = [
                "Content-Type": "application/octet-stream", "x-amz-content-sha256": SigV4Signer.emptyPayloadHash,
                "Content-Length": "0",
            ]
            // Declared here, the algorithm binds every part; S3 then keeps a checksum of the parts' checksums.
            if let name = checksum.flexibleName { headers.set("x-amz-checksum-algorithm", name) }
            for field in objectFields.fields { headers.set(field.name, field.value) }
            return UploadExchange(method: "POST", url: url([("uploads", "")]), headers: headers, userHeaders: false)
        case .list(let marker):
            var query = [("uploadId", uploadID ?? "")]
            if let marker { query.append(("part-number-marker", marker)) }
            return UploadExchange(method: "GET", url: url(query), headers: [:], userHeaders: false)
        case .verify:
            return nil
        case .part(let number):
            let range = MultipartPlan.range(ofPart: number, fileSize: known, partSize: partSize)
            return UploadExchange(
                method: "PUT", url: url([("partNumber", String(number)), ("uploadId", uploadID ?? "")]),
                headers: partHeaders(length: Int64(range.count)),
                body: BodyRange(offset: range.lowerBound, length: Int64(range.count)), checksum: bodyChecksum,
                userHeaders: false)
        case .complete:
            let document = Array(MultipartPlan.completionBody(parts, checksum: checksum.flexibleName).utf8)
            return UploadExchange(
                method: "POST", url: url([("uploadId", uploadID ?? "")]),
                headers: [
                    "Content-Type": "application/xml",
                    "x-amz-content-sha256": MessageDigest.hash(.sha256, document).hex,
                ],
                document: document, userHeaders: false)
        case .head:
            return UploadExchange(method: "HEAD", url: url(), headers: [:], userHeaders: false)
        }
    }

    private func url(_ query: [(String, String)] = []) -> String {
        endpoint.url(location, query: S3Encoding.canonicalQuery(query))
    }

    /// The body is not hashed for the signature (that would read every part again); the part's checksum
    /// header is signed and S3 checks the bytes against it. `x-amz-sdk-checksum-algorithm` is what AWS's SDKs
    /// send beside a flexible checksum (some S3-compatible servers look for the checksum by it). A body over
    /// 1 MiB waits for `100 Continue`, so a refusal costs no body; a smaller one is not worth the round trip
    /// (curl's own threshold), which a folder of small files would pay per file.
    private func partHeaders(length: Int64) -> HeaderFields {
        var headers: HeaderFields = [
            "x-amz-content-sha256": SigV4Signer.unsignedPayload, "Content-Type": "application/octet-stream",
        ]
        if length > 1 << 20 { headers.set("Expect", "100-continue") }
        if let name = checksum.flexibleName { headers.set("x-amz-sdk-checksum-algorithm", name) }
        return headers
    }

    private var bodyChecksum: BodyChecksum? {
        guard let algorithm = checksum.digest else { return nil }
        return BodyChecksum(
            header: checksum.flexibleName.map { "x-amz-checksum-" + $0.lowercased() } ?? "Content-MD5",
            algorithm: algorithm)
    }

    // MARK: Answers

    public mutating func response(_ head: ResponseHead, to plan: Plan) -> UploadDecision {
        response(head, body: [], checksum: nil, to: plan)
    }

    public mutating func response(_ head: ResponseHead, body: [UInt8], checksum sum: [UInt8]?, to plan: Plan)
        -> UploadDecision
    {
        var ok = (200..<300).contains(head.status)
        var error = ok ? nil : reader.answers.error(body)
        if plan == .complete {
            completeAttempts += 1
            // A 200 whose body is an <Error>: S3 failed while it assembled the object.
            if ok, let inside = reader.answers.error(body) { (ok, error) = (false, inside) }
        }
        if !ok, error?.code == "NoSuchUpload", plan != .create, plan != .put, plan != .head {
            // After a lost answer the first Complete may have worked: then the object is there, whole.
            if plan == .complete, completeAttempts > 1, MultipartPlan.expectedETag(parts) != nil {
                phase = .checking
                return .step(reason: "CompleteMultipartUpload may have worked before its answer was lost")
            }
            return restart()
        }
        if !ok, plan == .complete, error?.code == "InvalidPart" {
            // A part is not what S3 listed a moment ago: the next run lists again and sends what is missing.
            parts = []
            return .fail(reason: S3Call.failure(400, error, "S3 refused the parts of \(address)"))
        }
        if !ok, !(plan == .head && !RetryPolicy.isRetryable(status: head.status, errorCode: error?.code)) {
            let what = S3Call.failure(head.status, error, label(plan, refused: true))
            return RetryPolicy.isRetryable(status: head.status, errorCode: error?.code)
                ? .retry(reason: what, retryAfter: head.headers["Retry-After"]) : .fail(reason: what)
        }
        do throws(TransferError) {
            switch plan {
            case .put:
                return echo(head, sum, "PUT \(address)") ?? .completed
            case .create:
                uploadID = try reader.answers.uploadID(body)
                parts = []
                phase = .sending
                return .proceed
            case .list:
                guard case .listing(_, let before) = phase else { return try listed([], after: body) }
                return try listed(before, after: body)
            case .part(let number):
                return partDone(number, head, sum)
            case .complete:
                let etag = try reader.answers.completedETag(body)
                if let expected = MultipartPlan.expectedETag(parts), etag != expected {
                    return .corrupt(
                        reason: "S3 assembled \(address) with ETag \(etag), not the \(expected) this file's parts give")
                }
                return .completed
            case .head:
                if ok, let expected = MultipartPlan.expectedETag(parts), head.headers["ETag"] == expected {
                    return .completed
                }
                return restart()
            case .verify:
                return .proceed
            }
        } catch {
            return .fail(reason: error.message)
        }
    }

    public mutating func exchangeFailed(_ reason: String, during plan: Plan) -> UploadDecision {
        if plan == .complete { completeAttempts += 1 }
        return .retry(reason: "\(label(plan)): \(reason)", retryAfter: nil)
    }

    private mutating func listed(_ before: [ListedPart], after body: [UInt8]) throws(TransferError) -> UploadDecision {
        let page = try reader.answers.parts(body)
        if let next = page.nextMarker {
            phase = .listing(marker: next, listed: before + page.parts)
            return .step(reason: "ListParts has another page")
        }
        return reconcile(before + page.parts)
    }

    /// Keeps the recorded parts S3 still holds as sent; listed parts the token never recorded are verified next.
    private mutating func reconcile(_ listed: [ListedPart]) -> UploadDecision {
        let kept = MultipartPlan.trusted(recorded: parts, listed: listed)
        let lines = parts.filter { !kept.contains($0) }.map {
            "part \($0.number) on S3 is not the one this upload sent; sending it again"
        }
        let recorded = Set(parts.map(\.number))
        let unknown = listed.filter { part in
            !recorded.contains(part.number) && part.number >= 1 && part.number <= partCount
                && part.size
                    == Int64(MultipartPlan.range(ofPart: part.number, fileSize: known, partSize: partSize).count)
        }
        parts = kept
        phase = unknown.isEmpty ? .sending : .verifying(unknown)
        return lines.isEmpty ? .proceed : .noted(lines)
    }

    private mutating func partDone(_ number: Int, _ head: ResponseHead, _ sum: [UInt8]?) -> UploadDecision {
        guard let etag = head.headers["ETag"] else {
            return .fail(reason: "S3 acknowledged part \(number) without an ETag")
        }
        if let mismatch = echo(head, sum, "part \(number) of \(address)") { return mismatch }
        let size = Int64(MultipartPlan.range(ofPart: number, fileSize: known, partSize: partSize).count)
        let part = S3Part(
            number: number, size: size, md5: checksum == .md5 ? sum?.hex : nil,
            checksum: checksum.flexibleName == nil ? nil : sum.map { Data($0).base64EncodedString() }, etag: etag)
        parts = (parts.filter { $0.number != number } + [part]).sorted { $0.number < $1.number }
        return .proceed
    }

    private mutating func restart() -> UploadDecision {
        let reason = "S3 no longer knows upload \(uploadID ?? "?") (NoSuchUpload); starting a new multipart upload"
        uploadID = nil
        parts = []
        phase = .start
        completeAttempts = 0
        return .restarted(reason: reason)
    }

    /// A flexible checksum S3 echoes must be the one sent: S3 checked the bytes against it.
    private func echo(_ head: ResponseHead, _ sum: [UInt8]?, _ what: String) -> UploadDecision? {
        guard let name = checksum.flexibleName, let sum,
            let echoed = head.headers["x-amz-checksum-" + name.lowercased()]
        else { return nil }
        let sent = Data(sum).base64EncodedString()
        return echoed == sent ? nil : .corrupt(reason: "\(what): S3 answered \(name) \(echoed), not the \(sent) sent")
    }

    /// How messages name a request: after S3 refused it (`refused`), or after the exchange failed.
    private func label(_ plan: Plan, refused: Bool = false) -> String {
        switch plan {
        case .put: "PUT \(address)"
        case .head: "HEAD \(address)"
        case .create: refused ? "cannot start the upload to \(address)" : "CreateMultipartUpload"
        case .list, .verify: refused ? "cannot list the parts of \(address)" : "ListParts"
        case .part(let number): refused ? "part \(number) of \(address)" : "part \(number)"
        case .complete: refused ? "cannot complete \(address)" : "CompleteMultipartUpload"
        }
    }

    // MARK: Verifying a listed part

    public func digests(for plan: Plan) -> SourceDigests? {
        guard case .verify(let part) = plan else { return nil }
        let range = MultipartPlan.range(ofPart: part.number, fileSize: known, partSize: partSize)
        let flexible = checksum.flexibleName == nil ? [] : [checksum.digest!]
        let listsOurs = checksum.flexibleName.map { part.checksums[$0] != nil } ?? false
        return SourceDigests(
            range: BodyRange(offset: range.lowerBound, length: Int64(range.count)),
            algorithms: listsOurs ? flexible : [.md5] + flexible)
    }

    public mutating func digested(_ values: [[UInt8]], for plan: Plan) -> UploadDecision {
        guard case .verify(let part) = plan, case .verifying(let queue) = phase else { return .proceed }
        phase = queue.count > 1 ? .verifying(Array(queue.dropFirst())) : .sending
        if let name = checksum.flexibleName, let listed = part.checksums[name] {
            if Data(values[0]).base64EncodedString() == listed {
                parts.append(S3Part(number: part.number, size: part.size, checksum: listed, etag: part.etag))
            }
        } else if MultipartPlan.unquoted(part.etag).lowercased() == values[0].hex {
            // No checksum listed (a server that keeps none, or Content-MD5 parts): S3's ETag of a part is its MD5.
            parts.append(
                S3Part(
                    number: part.number, size: part.size, md5: checksum == .md5 ? values[0].hex : nil,
                    checksum: values.count > 1 ? Data(values[1]).base64EncodedString() : nil, etag: part.etag))
        }
        parts.sort { $0.number < $1.number }
        return .proceed
    }

    // MARK: State

    /// What S3 holds of this run's upload; nothing is counted before a resume's listing checked it.
    public var acknowledgedBytes: Int64 {
        switch phase {
        case .start where uploadID != nil, .listing, .verifying: 0
        default: parts.reduce(0) { $0 + $1.size }
        }
    }

    public var canResume: Bool { true }
    public var failureKeepsToken: Bool { uploadID != nil }
    public var pauseNote: String { "with \(parts.count) parts on S3; resume sends the rest" }

    public func record(into part: inout ResumeToken.UploadPart) {
        part.updateS3 {
            $0.uploadId = uploadID
            $0.parts = parts
        }
        part.acknowledgedBytes = parts.reduce(0) { $0 + $1.size }
    }
}
