/// tus 1.0.0's concatenation extension (https://tus.io/protocols/resumable-upload, "Concatenation"): one
/// file as several partial uploads sent at once, then a final upload that joins them; no I/O and no clock.
/// `UploadOperation` runs it, the partials side by side (``plans(besides:)``).
///
/// Each range of the file is a ``TusStateMachine`` of its own — the same rules as a single tus upload
/// (creation with `Upload-Length`, PATCHes from the acknowledged offset, HEAD after any interruption, a
/// `404` creates it anew) — whose creation also carries `Upload-Concat: partial` and whose bodies are read
/// from the range's place in the file. Once every partial is complete, one POST with
/// `Upload-Concat: final;URL1 URL2 …` (the partials in the file's order, as the server named them) creates
/// the final upload; its `Location` is the result. A partial the token names as complete is not asked
/// again: the final upload's creation is where the server checks it.
public struct TusConcatMachine: UploadMachine {
    public enum Plan: Sendable, Equatable {
        /// OPTIONS, before partials are created on a resume (a run that probed knows the capabilities).
        case discover(headers: HeaderFields)
        /// The next step of partial `index`.
        case partial(index: Int, TusStateMachine.Plan)
        /// The final upload's creation.
        case concatenate(headers: HeaderFields)
        case finished
    }

    /// One range of the file and the upload that sends it.
    public struct Partial: Sendable, Equatable {
        public let start: Int64
        public let length: Int64
        public fileprivate(set) var machine: TusStateMachine
        /// The server holds the whole range (its machine said so, or the token did).
        public fileprivate(set) var complete: Bool
        /// The partial upload's URL once known; kept when complete.
        public fileprivate(set) var url: String?
        /// Bytes of the range the server acknowledged last.
        public fileprivate(set) var committed: Int64
    }

    public let size: Int64
    public private(set) var partials: [Partial]
    public private(set) var capabilities: TusCapabilities?
    /// The final upload, once created: the upload is complete.
    public private(set) var finalURL: String?
    /// `Upload-Expires` as the server last sent it (for any of the partials).
    public private(set) var expires: String?
    private var checksum: DigestAlgorithm?
    private var discovering: Bool
    private var failed = false
    private let creationURL: String
    private let filename: String
    private let filetype: String
    private let chunkSize: Int64?

    /// `concat`: the ranges, with what a token kept of them (URLs, offsets, the final upload). `capabilities`:
    /// from an OPTIONS already made; nil on a resume, where one OPTIONS comes first only when a partial is
    /// still to be created. The rest as ``TusStateMachine``'s.
    public init(
        size: Int64, creationURL: String, filename: String, filetype: String = "application/octet-stream",
        concat: ResumeToken.TusConcat, capabilities: TusCapabilities? = nil, checksum: DigestAlgorithm? = nil,
        expires: String? = nil, chunkSize: Int64? = nil
    ) {
        self.size = size
        self.creationURL = creationURL
        self.filename = filename
        self.filetype = filetype
        self.capabilities = capabilities
        self.checksum = checksum ?? capabilities?.checksum
        self.expires = expires
        self.chunkSize = chunkSize
        finalURL = concat.final
        partials = []
        discovering = false
        for kept in concat.partials {
            partials.append(
                Partial(
                    start: kept.start, length: kept.length, machine: machine(for: kept.length, at: kept.url),
                    complete: kept.url != nil && kept.offset == kept.length, url: kept.url,
                    committed: kept.url == nil ? 0 : kept.offset))
        }
        discovering = capabilities == nil && finalURL == nil && partials.contains { $0.url == nil }
    }

    /// The final upload's URL: where the file now is.
    public var location: String? { finalURL }

    /// The headers of the final upload's creation: the partials by URL, the file's name and type.
    public var concatenationHeaders: HeaderFields {
        var headers: HeaderFields = ["Tus-Resumable": TusStateMachine.version]
        headers.append("Upload-Concat", "final;" + partials.compactMap(\.url).joined(separator: " "))
        headers.append("Upload-Metadata", TusStateMachine.metadata(filename: filename, filetype: filetype))
        return headers
    }

    public func plan() -> Plan { plans(besides: []).first ?? .finished }

    public func plans(besides running: [Plan]) -> [Plan] {
        if failed || finalURL != nil { return running.isEmpty ? [.finished] : [] }
        if discovering { return running.isEmpty ? [.discover(headers: [:])] : [] }
        if partials.allSatisfy(\.complete) {
            return running.isEmpty ? [.concatenate(headers: concatenationHeaders)] : []
        }
        let busy = Set(running.compactMap { if case .partial(let index, _) = $0 { index } else { nil } })
        return partials.indices.filter { !partials[$0].complete && !busy.contains($0) }.map {
            .partial(index: $0, partials[$0].machine.plan())
        }
    }

    public func exchange(for plan: Plan) -> UploadExchange? {
        switch plan {
        case .discover(let headers):
            return UploadExchange(method: "OPTIONS", url: nil, headers: headers)
        case .partial(let index, let step):
            guard var exchange = partials[index].machine.exchange(for: step) else { return nil }
            if exchange.method == "POST" { exchange.headers.append("Upload-Concat", "partial") }
            // The partial's offsets count from its range's start.
            exchange.body = exchange.body.map {
                BodyRange(offset: partials[index].start + $0.offset, length: $0.length)
            }
            return exchange
        case .concatenate(let headers):
            // An empty body is still a body: libcurl then sends Content-Length: 0 with the POST.
            return UploadExchange(method: "POST", url: nil, headers: headers, body: BodyRange(offset: 0, length: 0))
        case .finished:
            return nil
        }
    }

    public var acknowledgedBytes: Int64 {
        finalURL != nil ? size : partials.reduce(0) { $0 + ($1.complete ? $1.length : $1.committed) }
    }

    /// Any tus server continues an upload it has; each partial is one.
    public var canResume: Bool { true }

    public func record(into part: inout ResumeToken.UploadPart) {
        part.wire = .tus(expires: expires, checksum: checksum)
        part.uploadURL = nil
        part.acknowledgedBytes = acknowledgedBytes
        part.concat = ResumeToken.TusConcat(
            partials: partials.map {
                .init(start: $0.start, length: $0.length, url: $0.url, offset: $0.complete ? $0.length : $0.committed)
            },
            final: finalURL)
    }

    public mutating func response(_ head: ResponseHead, to plan: Plan) -> UploadDecision {
        if let value = head.headers["Upload-Expires"] { expires = value }
        switch plan {
        case .discover:
            return discovered(head)
        case .partial(let index, let step):
            return partialDecision(index, partials[index].machine.response(head, to: step))
        case .concatenate:
            return concatenated(head)
        case .finished:
            return .completed
        }
    }

    public mutating func exchangeFailed(_ reason: String, during plan: Plan) -> UploadDecision {
        guard case .partial(let index, let step) = plan else { return .retry(reason: reason, retryAfter: nil) }
        return partialDecision(index, partials[index].machine.exchangeFailed(reason, during: step))
    }

    // MARK: Answers

    private mutating func discovered(_ head: ResponseHead) -> UploadDecision {
        if RetryPolicy.isRetryable(status: head.status) {
            return .retry(
                reason: "the server answered \(head.status) to OPTIONS", retryAfter: head.headers["Retry-After"])
        }
        guard head.isSuccess, let found = TusCapabilities(head), found.extensions.contains("concatenation") else {
            return fail("the server no longer offers tus concatenation, which this upload's partial uploads need")
        }
        if let refusal = TusStateMachine.refusal(found, size: size) { return fail(refusal) }
        capabilities = found
        if checksum == nil { checksum = found.checksum }
        discovering = false
        for i in partials.indices where partials[i].url == nil {
            partials[i].machine = machine(for: partials[i].length, at: nil)
        }
        return .proceed
    }

    /// What partial `index`'s machine decided means to the whole upload.
    private mutating func partialDecision(_ index: Int, _ decision: UploadDecision) -> UploadDecision {
        var partial = partials[index]
        if let url = partial.machine.resource { partial.url = url }
        if capabilities == nil, let found = partial.machine.capabilities { capabilities = found }
        if checksum == nil { checksum = partial.machine.checksum }
        switch partial.machine.state {
        case .append(_, let offset): partial.committed = offset
        case .discover, .create: (partial.url, partial.committed) = (nil, 0)
        case .queryOffset, .done: break
        }
        defer { partials[index] = partial }
        let name = "partial upload \(index + 1) of \(partials.count)"
        switch decision {
        case .completed:
            partial.complete = true
            partial.committed = partial.length
            return .proceed
        case .restarted(let reason):
            // Only this range starts over; the others keep what the server holds.
            return .noted(["\(name): \(reason); creating it anew"])
        case .fail(let reason):
            failed = true
            return .fail(reason: "\(name): \(reason)")
        case .retry(let reason, let retryAfter):
            return .retry(reason: "\(name): \(reason)", retryAfter: retryAfter)
        case .resend(let reason):
            return .resend(reason: "\(name): \(reason)")
        case .corrupt(let reason):
            failed = true
            return .corrupt(reason: "\(name): \(reason)")
        case .proceed, .step, .noted:
            return decision
        }
    }

    private mutating func concatenated(_ head: ResponseHead) -> UploadDecision {
        switch head.status {
        case 200...299:
            guard let url = resolveLocation(head.headers["Location"], against: creationURL) else {
                return fail("the server did not say where the final upload lives (no Location)")
            }
            finalURL = url
            return .completed
        case 404, 410:
            // A partial is gone (expired, or joined by a final upload whose answer was lost): only new partials
            // can make the file again.
            for i in partials.indices {
                partials[i] = Partial(
                    start: partials[i].start, length: partials[i].length,
                    machine: machine(for: partials[i].length, at: nil), complete: false, url: nil, committed: 0)
            }
            return .restarted(reason: "the server no longer has a partial upload (\(head.status) to the final upload)")
        default:
            if RetryPolicy.isRetryable(status: head.status) || head.status == 423 {
                return .retry(
                    reason: "the server answered \(head.status) while creating the final upload",
                    retryAfter: head.headers["Retry-After"])
            }
            return fail("the server answered \(head.status) \(head.reason) while creating the final upload")
        }
    }

    private mutating func fail(_ reason: String) -> UploadDecision {
        failed = true
        return .fail(reason: reason)
    }

    /// The tus upload of a range of `length` bytes, at `url` when the server named one.
    private func machine(for length: Int64, at url: String?) -> TusStateMachine {
        TusStateMachine(
            size: length, creationURL: creationURL, filename: filename, filetype: filetype,
            capabilities: capabilities, uploadURL: url, checksum: checksum, expires: nil, chunkSize: chunkSize)
    }
}
