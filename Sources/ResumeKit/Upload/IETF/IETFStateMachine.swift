import FoundationEssentials

/// The upload protocol rules of draft-ietf-httpbis-resumable-upload, with no I/O and no clock.
/// It says which request to send next and what each response means; `UploadOperation` runs them.
public struct IETFStateMachine: StreamingUploadMachine {
    /// The next request.
    public enum Plan: Sendable, Equatable {
        case create(headers: HeaderFields, length: Int64, complete: Bool)
        case queryOffset(url: String, headers: HeaderFields)
        case append(url: String, headers: HeaderFields, offset: Int64, length: Int64, complete: Bool)
        /// OPTIONS (interop 9): the append limits a 413 did not name; `nil` asks the creation's URL.
        case queryLimits(url: String?, headers: HeaderFields)
        /// DELETE (interop 9): the server named two URLs for one upload, which is cancelled, then fails.
        case cancel(url: String, headers: HeaderFields, reason: String)
        case finished
    }

    /// The upload's length; for a stream whose end was not read yet, the bytes read so far.
    public private(set) var size: Int64
    /// False while a stream's length is unknown: no request then says `Upload-Complete: ?1` or `Upload-Length`.
    public private(set) var lengthKnown: Bool
    public private(set) var version: InteropVersion
    public private(set) var state: ResumableUploadState
    /// True once a 104 (or a token) showed that the server speaks the draft.
    public private(set) var serverSupportsDraft: Bool
    /// From `Upload-Limit`, or `--chunk-size`: the largest append.
    public private(set) var maxAppendSize: Int64?
    /// From `Upload-Limit`: the smallest append the server takes, but for the last.
    private var minAppendSize: Int64?
    private let versionPinned: Bool
    private var versionSwitched = false
    /// The length of the request a 413 refused while its limits are asked (``Plan/queryLimits(url:headers:)``).
    private var refusedLength: Int64?
    /// The upload URL to cancel (DELETE) before the upload fails, and why.
    private var cancelling: Plan?

    public init(
        size: Int64, version: InteropVersion = .newest, versionPinned: Bool = false, uploadURL: String? = nil,
        chunkSize: Int64? = nil, lengthKnown: Bool = true
    ) {
        self.size = size
        self.lengthKnown = lengthKnown
        self.version = version
        self.versionPinned = versionPinned
        self.maxAppendSize = chunkSize
        state = uploadURL.map { .queryOffset(url: $0) } ?? .create
        serverSupportsDraft = uploadURL != nil
    }

    /// More of a stream was read (`final`: its end too). The next plan appends from the acknowledged offset.
    public mutating func extend(to newSize: Int64, final: Bool) {
        precondition(newSize >= size, "a stream only grows")
        size = newSize
        lengthKnown = final
    }

    /// An append that does not complete the upload carries no length in its headers: it may go on.
    public func canGrow(_ plan: Plan) -> Bool {
        if case .append(_, _, _, _, complete: false) = plan { true } else { false }
    }

    public mutating func grow(_ plan: Plan, to length: Int64) -> Plan {
        guard case .append(let url, let headers, let offset, _, false) = plan else { return plan }
        size = max(size, offset + length)
        return .append(url: url, headers: headers, offset: offset, length: length, complete: false)
    }

    public var uploadURL: String? { state.uploadURL }

    public func plan() -> Plan {
        var headers: HeaderFields = [InteropVersion.header: String(version.rawValue)]
        if let cancelling { return cancelling }
        if refusedLength != nil { return .queryLimits(url: state.uploadURL, headers: headers) }
        let offset: Int64
        switch state {
        case .create, .discover: offset = 0
        case .queryOffset(let url): return .queryOffset(url: url, headers: headers)
        case .append(_, let at): offset = at
        case .done: return .finished
        }
        let url = state.uploadURL
        // Only a whole-file creation is safe before the server showed support: an unaware server
        // would store a first chunk as the complete file.
        let length = url == nil && !serverSupportsDraft ? size : min(size - offset, maxAppendSize ?? (size - offset))
        let complete = lengthKnown && offset + length == size
        let field = version.completionField(complete: complete)
        headers.append(field.name, field.value)
        if url != nil { headers.append("Upload-Offset", String(offset)) }
        if version.sendsUploadLength, lengthKnown { headers.append("Upload-Length", String(size)) }
        guard let url else { return .create(headers: headers, length: length, complete: complete) }
        headers.append("Content-Type", version.appendContentType)
        return .append(url: url, headers: headers, offset: offset, length: length, complete: complete)
    }

    /// A 1xx during creation: a 104 of our version carries the upload URL to persist at once.
    public mutating func informational(_ head: ResponseHead, requestURL: String) -> UploadInformational {
        guard head.status == 104, case .create = state else { return .nothing }
        // A 104 of another interop version is not for us (draft: ignore it).
        guard head.headers[InteropVersion.header].flatMap({ Int($0.trimmingSpaces()) }) == version.rawValue,
            let location = head.headers["Location"], let url = resolveLocation(location, against: requestURL)
        else { return .nothing }
        serverSupportsDraft = true
        let limits = StructuredField.integerDictionary(head.headers["Upload-Limit"])
        if let maxAppend = limits["max-append-size"], maxAppend > 0 {
            maxAppendSize = min(maxAppendSize ?? maxAppend, maxAppend)
        }
        uploadURLFromInformational = url
        creationRequestURL = requestURL
        if let max = Self.maxSize(head), max < size { return .tooLarge(limit: max) }
        return .uploadURL(url)
    }

    private var uploadURLFromInformational: String?
    private var creationRequestURL: String?

    /// The largest upload the server accepts, if its 104 said so.
    public static func maxSize(_ head: ResponseHead) -> Int64? {
        StructuredField.integerDictionary(head.headers["Upload-Limit"])["max-size"]
    }

    public func exchange(for plan: Plan) -> UploadExchange? {
        switch plan {
        case .create(let headers, let length, _):
            UploadExchange(method: "POST", url: nil, headers: headers, body: BodyRange(offset: 0, length: length))
        case .queryOffset(let url, let headers):
            UploadExchange(method: "HEAD", url: url, headers: headers)
        case .append(let url, let headers, let offset, let length, _):
            UploadExchange(method: "PATCH", url: url, headers: headers, body: BodyRange(offset: offset, length: length))
        case .queryLimits(let url, let headers):
            UploadExchange(method: "OPTIONS", url: url, headers: headers)
        case .cancel(let url, let headers, _):
            UploadExchange(method: "DELETE", url: url, headers: headers)
        case .finished:
            nil
        }
    }

    public var acknowledgedBytes: Int64 { state.acknowledged(of: size) }

    public var canResume: Bool { serverSupportsDraft }

    public func record(into part: inout ResumeToken.UploadPart) {
        part.wire = .ietf(version)
        part.uploadURL = uploadURL ?? uploadURLFromInformational
        if case .append(_, let offset) = state { part.acknowledgedBytes = offset }
    }

    public mutating func response(_ head: ResponseHead, to plan: Plan) -> UploadDecision {
        switch plan {
        case .create(_, let length, let complete):
            return creationResponse(head, length: length, complete: complete)
        case .queryOffset(let url, _):
            return offsetResponse(head, url: url)
        case .append(let url, _, let offset, let length, let complete):
            return appendResponse(head, url: url, offset: offset, length: length, complete: complete)
        case .queryLimits:
            return limitsResponse(head)
        case .cancel(_, _, let reason):
            cancelling = nil
            return state.fail(reason)
        case .finished:
            return .completed
        }
    }

    public mutating func exchangeFailed(_ reason: String, during plan: Plan) -> UploadDecision {
        if case .cancel(_, _, let why) = plan {
            cancelling = nil
            return state.fail(why)
        }
        if case .queryLimits = plan { return .retry(reason: reason, retryAfter: nil) }
        let url = uploadURLFromInformational ?? uploadURL
        state = url.map { .queryOffset(url: $0) } ?? .create
        let note =
            url != nil || serverSupportsDraft
            ? "" : "; the server cannot resume uploads, so the whole file is sent again"
        return .retry(reason: reason + note, retryAfter: nil)
    }

    private mutating func creationResponse(_ head: ResponseHead, length: Int64, complete: Bool) -> UploadDecision {
        let location =
            uploadURLFromInformational
            ?? head.headers["Location"].flatMap { URL(string: $0)?.absoluteString }
        if let refusal = targetsOwnAnswer(head, while: "creating the upload") { return refusal }
        // -10 on, and a MUST to check from -12: one creation, one URL (a 104 and the final answer agree).
        if version.saysWhoseAnswer, let named = uploadURLFromInformational, let requestURL = creationRequestURL,
            let final = resolveLocation(head.headers["Location"], against: requestURL), final != named
        {
            let reason = "the server named two URLs for one upload (\(named), then \(final)); it was cancelled"
            cancelling = .cancel(url: named, headers: [InteropVersion.header: String(version.rawValue)], reason: reason)
            return .step(reason: "the server named two URLs for one upload")
        }
        switch head.status {
        case 200...299:
            if complete {
                if let refusal = contradiction(head, sent: size) { return state.fail(refusal) }
                if let offset = StructuredField.integer(head.headers["Upload-Offset"]), offset != size {
                    return state.fail("the server acknowledged \(offset) of \(size) bytes")
                }
                return state.complete()
            }
            guard let url = location else { return state.fail("the server did not say where the upload lives") }
            serverSupportsDraft = true
            let offset = StructuredField.integer(head.headers["Upload-Offset"]) ?? length
            // From interop 9 a server may hold more than this request carried; the file supplies the rest.
            guard (0...(version.saysWhoseAnswer ? size : length)).contains(offset) else {
                return state.fail("the server acknowledged \(offset) bytes of a creation that carried \(length)")
            }
            state = .append(url: url, offset: offset)
            return .proceed
        case 400:
            if !versionPinned, !versionSwitched,
                let offered = head.headers[InteropVersion.header].flatMap({ Int($0.trimmingSpaces()) }),
                offered != version.rawValue, let other = InteropVersion(rawValue: offered)
            {
                versionSwitched = true
                version = other
                uploadURLFromInformational = nil
                state = .create
                return .step(reason: "the server speaks draft interop version \(offered); switching")
            }
            return state.fail("the server refused the upload: 400 \(head.reason)")
        case 413 where version.saysWhoseAnswer:
            let limits = StructuredField.integerDictionary(head.headers["Upload-Limit"])
            if let most = limits["max-size"], most < size {
                return state.fail("the server takes uploads of at most \(most) bytes; this one has \(size)")
            }
            serverSupportsDraft = true
            state = .create
            return smaller(than: length, limits)
        default:
            return transientOrFail(head, url: location, what: "creating the upload")
        }
    }

    private mutating func offsetResponse(_ head: ResponseHead, url: String) -> UploadDecision {
        if let refusal = targetsOwnAnswer(head, while: "asking for the offset") { return refusal }
        switch head.status {
        case 200...299:
            guard let offset = StructuredField.integer(head.headers["Upload-Offset"]), offset >= 0 else {
                return state.fail("the server's answer carries no Upload-Offset")
            }
            guard offset <= size else {
                return state.fail("the server holds \(offset) bytes, more than the file's \(size)")
            }
            if offset == size, version.isComplete(head.headers) == true { return state.complete() }
            state = .append(url: url, offset: offset)
            return .proceed
        case 404, 410:
            return restart("the server no longer has the upload")
        default:
            return transientOrFail(head, url: url, what: "asking for the offset")
        }
    }

    private mutating func appendResponse(
        _ head: ResponseHead, url: String, offset: Int64, length: Int64, complete: Bool
    ) -> UploadDecision {
        if let refusal = targetsOwnAnswer(head, while: "appending") { return refusal }
        switch head.status {
        case 200...299:
            let end = offset + length
            if complete, let refusal = contradiction(head, sent: end) { return state.fail(refusal) }
            if let acknowledged = StructuredField.integer(head.headers["Upload-Offset"]), acknowledged != end {
                if acknowledged > end, !version.saysWhoseAnswer || acknowledged > size {
                    return state.fail("the server acknowledged \(acknowledged) bytes, more than the \(end) sent")
                }
                state = .queryOffset(url: url)
                return .step(reason: "the server acknowledged \(acknowledged), not \(end)")
            }
            if complete { return state.complete() }
            state = .append(url: url, offset: end)
            return .proceed
        case 409:
            state = .queryOffset(url: url)
            return .step(reason: "the server has another offset")
        case 413 where version.saysWhoseAnswer:
            state = .queryOffset(url: url)
            return smaller(than: length, StructuredField.integerDictionary(head.headers["Upload-Limit"]))
        case 404, 410:
            return restart("the server no longer has the upload")
        default:
            return transientOrFail(head, url: url, what: "appending")
        }
    }

    /// Why a 2xx to a request that said `Upload-Complete: ?1` and carried bytes up to `sent` cannot mean
    /// done: an `Upload-Offset` that is not a number or lies beyond what was sent, or a completion flag
    /// that says incomplete while the offset is full or absent (a server that contradicts itself has not
    /// got the file). A missing offset or flag alone is fine: NIO's final response swaps the flags, and
    /// interop 8 needs no offset. An offset short of `sent` is left to the caller (HEAD, or fail).
    private func contradiction(_ head: ResponseHead, sent: Int64) -> String? {
        var offset: Int64?
        if let raw = head.headers["Upload-Offset"] {
            guard let n = StructuredField.integer(raw), n >= 0 else {
                return
                    "the server's Upload-Offset '\(raw.prefix(40))' is not a byte count, so the upload cannot count as "
                    + "done"
            }
            if n > sent { return "the server acknowledged \(n) bytes, more than the \(sent) sent" }
            offset = n
        }
        if version.isComplete(head.headers) == false, offset == nil || offset == sent {
            let flag = version == .v3 ? "Upload-Incomplete: ?1" : "Upload-Complete: ?0"
            return "the server answered the last request with \(flag), so the upload is not done"
        }
        return nil
    }

    /// Interop 9: an error that says `Upload-Complete: ?1` is the target resource's own answer (PR #3404); the
    /// upload is over, and resuming it would only send the bytes again.
    private mutating func targetsOwnAnswer(_ head: ResponseHead, while what: String) -> UploadDecision? {
        guard version.saysWhoseAnswer, !(200...299).contains(head.status), version.isComplete(head.headers) == true
        else { return nil }
        return state.fail("the server answered \(head.status) \(head.reason) while \(what), for the upload as finished")
    }

    /// Interop 9: a 413 asks for appends smaller than the `length` refused, within the server's
    /// `min-append-size` and `max-append-size` (PR #3312); limits it does not name are asked with OPTIONS first.
    private mutating func smaller(than length: Int64, _ limits: [String: Int64]) -> UploadDecision {
        if let least = limits["min-append-size"], least > 0 { minAppendSize = least }
        if let most = limits["max-append-size"], most > 0, most < length, most >= (minAppendSize ?? 1) {
            maxAppendSize = min(maxAppendSize ?? most, most)
            return .step(reason: "the server takes appends of at most \(most) bytes")
        }
        guard limits["max-append-size"] == nil, refusedLength == nil else {
            return state.fail("the server refused \(length) bytes as too large (413) and takes no smaller append")
        }
        refusedLength = length
        return .step(reason: "the server refused \(length) bytes as too large; asking for its limits")
    }

    private mutating func limitsResponse(_ head: ResponseHead) -> UploadDecision {
        guard let refused = refusedLength else { return .proceed }
        let limits = StructuredField.integerDictionary(head.headers["Upload-Limit"])
        guard let most = limits["max-append-size"], most > 0 else {
            refusedLength = nil
            return state.fail("the server refused \(refused) bytes as too large (413) and names no smaller append")
        }
        let decision = smaller(than: refused, limits)
        refusedLength = nil
        return decision
    }

    private mutating func transientOrFail(_ head: ResponseHead, url: String?, what: String) -> UploadDecision {
        if RetryPolicy.isRetryable(status: head.status) {
            state = url.map { .queryOffset(url: $0) } ?? .create
            return .retry(
                reason: "the server answered \(head.status) while \(what)", retryAfter: head.headers["Retry-After"])
        }
        return state.fail("the server answered \(head.status) \(head.reason) while \(what)")
    }

    private mutating func restart(_ reason: String) -> UploadDecision {
        state = .create
        uploadURLFromInformational = nil
        return .restarted(reason: reason)
    }
}
