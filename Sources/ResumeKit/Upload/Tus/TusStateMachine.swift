import FoundationEssentials

/// The rules of tus 1.0.0 (https://tus.io/protocols/resumable-upload) with the extensions creation,
/// creation-with-upload, termination (see ``TusStateMachine/deleteHeaders``), checksum and expiration;
/// no I/O and no clock. `UploadOperation` runs it.
///
/// OPTIONS (unless the capabilities are known) → POST with `Upload-Length` and `Upload-Metadata`
/// (with creation-with-upload, the first piece of the file rides along) → PATCHes from the offset
/// the server acknowledged; after any interruption HEAD for `Upload-Offset` first.
public struct TusStateMachine: StreamingUploadMachine {
    public static let version = "1.0.0"
    public static let patchContentType = "application/offset+octet-stream"
    /// With creation-with-upload, what the POST carries at most: the upload URL comes only with the 201, so
    /// a cut POST loses what it carried and leaves the server an orphan; a few bytes keep that window short.
    public static let creationPiece: Int64 = 64 << 10
    /// The most an append with `Upload-Checksum` carries unless `--chunk-size` says otherwise: the server
    /// keeps such an append only whole, so this is what a fault can cost.
    public static let checksummedPiece: Int64 = 8 << 20

    public enum Plan: Sendable, Equatable {
        case discover(headers: HeaderFields)
        case create(headers: HeaderFields, length: Int64, checksum: DigestAlgorithm?)
        case queryOffset(url: String, headers: HeaderFields)
        case append(url: String, headers: HeaderFields, offset: Int64, length: Int64, checksum: DigestAlgorithm?)
        case finished
    }

    /// The upload's length; for a stream whose end was not read yet, the bytes read so far.
    public private(set) var size: Int64
    /// False while a stream's length is unknown: the upload is created with `Upload-Defer-Length: 1`.
    public private(set) var lengthKnown: Bool
    /// The server knows the length: from the creation, a PATCH that carried it, or a HEAD that showed it.
    private var lengthDeclared: Bool
    public private(set) var state: ResumableUploadState
    public private(set) var capabilities: TusCapabilities?
    /// The `Upload-Checksum` algorithm, once chosen (from the capabilities or a token).
    public private(set) var checksum: DigestAlgorithm?
    /// `Upload-Expires` as the server last sent it.
    public private(set) var expires: String?
    /// The upload's URL once the server named it, kept after the upload completed (a partial upload of
    /// ``TusConcatMachine`` is named by it in the final upload).
    public private(set) var resource: String?
    private let creationURL: String
    private let metadata: String
    private let chunkSize: Int64?

    /// `creationURL`: where a POST creates uploads; relative `Location`s resolve against it. `filename` goes
    /// base64 in `Upload-Metadata` with `filetype` (tuspyserver requires both). `capabilities`: from an OPTIONS
    /// already made (the `auto` probe); nil → the machine asks. `uploadURL`, `checksum`, `expires`: what a token
    /// kept (with an upload URL, the machine asks for the offset first; without a checksum it chooses from the
    /// server's list). `chunkSize`: the most bytes a PATCH carries; nil → the rest of the file in one
    /// (``checksummedPiece`` when appends carry a checksum).
    public init(
        size: Int64, creationURL: String, filename: String, filetype: String = "application/octet-stream",
        capabilities: TusCapabilities? = nil, uploadURL: String? = nil, checksum: DigestAlgorithm? = nil,
        expires: String? = nil, chunkSize: Int64? = nil, lengthKnown: Bool = true
    ) {
        self.size = size
        self.lengthKnown = lengthKnown
        self.lengthDeclared = lengthKnown
        self.creationURL = creationURL
        self.metadata = Self.metadata(filename: filename, filetype: filetype)
        self.capabilities = capabilities
        self.checksum = checksum ?? capabilities?.checksum
        self.expires = expires
        self.chunkSize = chunkSize
        state = uploadURL.map { .queryOffset(url: $0) } ?? (capabilities == nil ? .discover : .create)
    }

    public var uploadURL: String? { state.uploadURL }

    /// `Upload-Metadata` with `filename` and `filetype`, base64 (tuspyserver requires both).
    public static func metadata(filename: String, filetype: String = "application/octet-stream") -> String {
        [("filename", filename), ("filetype", filetype)]
            .map { "\($0.0) \(Data($0.1.utf8).base64EncodedString())" }.joined(separator: ",")
    }

    /// More of a stream was read (`final`: its end too). The next plan appends from the acknowledged offset;
    /// the first append after the end says the length (`Upload-Length`).
    public mutating func extend(to newSize: Int64, final: Bool) {
        precondition(newSize >= size, "a stream only grows")
        size = newSize
        lengthKnown = final
    }

    /// The headers a termination (DELETE) carries.
    public static var deleteHeaders: HeaderFields { ["Tus-Resumable": version] }

    public func plan() -> Plan {
        var headers: HeaderFields = ["Tus-Resumable": Self.version]
        switch state {
        case .discover:
            return .discover(headers: [:])
        case .create:
            headers.append(lengthKnown ? "Upload-Length" : "Upload-Defer-Length", lengthKnown ? String(size) : "1")
            headers.append("Upload-Metadata", metadata)
            var length: Int64 = 0
            if capabilities?.extensions.contains("creation-with-upload") == true, size > 0 {
                length = min(size, chunkSize ?? Self.creationPiece, Self.creationPiece)
                headers.append("Content-Type", Self.patchContentType)
            }
            return .create(headers: headers, length: length, checksum: length > 0 ? checksum : nil)
        case .queryOffset(let url):
            return .queryOffset(url: url, headers: headers)
        case .append(let url, let offset):
            // A checksummed append counts all or nothing (a cut or a server restart mid-request keeps
            // none of it), so without a chosen size it is bounded: a fault costs at most one piece.
            let length = min(size - offset, chunkSize ?? (checksum == nil ? size - offset : Self.checksummedPiece))
            headers.append("Upload-Offset", String(offset))
            if lengthKnown && !lengthDeclared { headers.append("Upload-Length", String(size)) }
            headers.append("Content-Type", Self.patchContentType)
            return .append(url: url, headers: headers, offset: offset, length: length, checksum: checksum)
        case .done:
            return .finished
        }
    }

    public func exchange(for plan: Plan) -> UploadExchange? {
        func sum(_ algorithm: DigestAlgorithm?) -> BodyChecksum? {
            algorithm.map { BodyChecksum(header: "Upload-Checksum", algorithm: $0, prefix: $0.rawValue + " ") }
        }
        switch plan {
        case .discover(let headers):
            return UploadExchange(method: "OPTIONS", url: nil, headers: headers)
        case .create(let headers, let length, let checksum):
            // An empty body is still a body: libcurl then sends Content-Length: 0 with the POST.
            return UploadExchange(
                method: "POST", url: nil, headers: headers, body: BodyRange(offset: 0, length: length),
                checksum: sum(checksum))
        case .queryOffset(let url, let headers):
            return UploadExchange(method: "HEAD", url: url, headers: headers)
        case .append(let url, let headers, let offset, let length, let checksum):
            return UploadExchange(
                method: "PATCH", url: url, headers: headers, body: BodyRange(offset: offset, length: length),
                checksum: sum(checksum))
        case .finished:
            return nil
        }
    }

    public var acknowledgedBytes: Int64 { state.acknowledged(of: size) }

    /// Any tus server continues an upload it has.
    public var canResume: Bool { true }

    public func record(into part: inout ResumeToken.UploadPart) {
        part.wire = .tus(expires: expires, checksum: checksum)
        if state != .done { part.uploadURL = uploadURL }
        if case .append(_, let offset) = state { part.acknowledgedBytes = offset }
    }

    public mutating func response(_ head: ResponseHead, to plan: Plan) -> UploadDecision {
        if let value = head.headers["Upload-Expires"] { expires = value }
        switch plan {
        case .discover:
            return discovered(head)
        case .create(_, let length, _):
            return created(head, sent: length)
        case .queryOffset(let url, _):
            return offsetResponse(head, url: url)
        case .append(let url, let headers, let offset, let length, _):
            return appended(head, url: url, offset: offset, length: length, declaring: headers["Upload-Length"] != nil)
        case .finished:
            return .completed
        }
    }

    public mutating func exchangeFailed(_ reason: String, during plan: Plan) -> UploadDecision {
        if let url = uploadURL { state = .queryOffset(url: url) }
        return .retry(reason: reason, retryAfter: nil)
    }

    private mutating func discovered(_ head: ResponseHead) -> UploadDecision {
        if RetryPolicy.isRetryable(status: head.status) {
            return .retry(
                reason: "the server answered \(head.status) to OPTIONS", retryAfter: head.headers["Retry-After"])
        }
        // A server that does not answer OPTIONS may still speak tus core + creation (the user pinned tus).
        let found = head.isSuccess ? TusCapabilities(head) : nil
        let capabilities = found ?? TusCapabilities()
        if let refusal = Self.refusal(capabilities, size: size) { return state.fail(refusal) }
        if !lengthKnown, found != nil, !capabilities.extensions.contains("creation-defer-length") {
            return state.fail("the server cannot take a stream of unknown length (it offers no creation-defer-length)")
        }
        self.capabilities = capabilities
        if checksum == nil { checksum = capabilities.checksum }
        state = .create
        return .proceed
    }

    /// Why a server with these capabilities cannot take a file of `size` bytes, if it cannot.
    public static func refusal(_ capabilities: TusCapabilities, size: Int64) -> String? {
        if let max = capabilities.maxSize, max < size {
            return "the server accepts at most \(max) bytes (Tus-Max-Size); the file has \(size)"
        }
        if !capabilities.versions.contains(version) {
            return "the server speaks tus \(capabilities.versions.joined(separator: ", ")), not \(version)"
        }
        return nil
    }

    private mutating func created(_ head: ResponseHead, sent: Int64) -> UploadDecision {
        switch head.status {
        case 200...299:
            guard let url = resolveLocation(head.headers["Location"], against: creationURL) else {
                return state.fail("the server did not say where the upload lives (no Location)")
            }
            guard sent > 0 else { return reached(0, at: url) }
            if let offset = Self.offset(head), offset > sent {
                return state.fail("the server acknowledged \(offset) bytes of a creation that carried \(sent)")
            }
            guard let offset = Self.offset(head), (0...size).contains(offset) else {
                state = .queryOffset(url: url)
                return .step(reason: "the server did not say how much of the creation it kept")
            }
            return reached(offset, at: url)
        case 413:
            return state.fail("the server refused the upload as too large (413)")
        case 460:
            return .resend(reason: "the server found the checksum of the first piece wrong (460)")
        default:
            return transientOrFail(head, what: "creating the upload")
        }
    }

    private mutating func offsetResponse(_ head: ResponseHead, url: String) -> UploadDecision {
        switch head.status {
        case 200...299:
            guard let offset = Self.offset(head), offset >= 0 else {
                return state.fail("the server's answer carries no usable Upload-Offset")
            }
            let length = head.headers["Upload-Length"].flatMap { ContentLength.decimal($0.trimmingSpaces()) }
            if let length, lengthKnown, length != size {
                return restart("the server's upload is \(length) bytes long, the file \(size)")
            }
            lengthDeclared = length != nil
            guard offset <= size else {
                return state.fail("the server holds \(offset) bytes, more than the file's \(size)")
            }
            return reached(offset, at: url)
        case 403, 404, 410:
            return restart("the server no longer has the upload (\(head.status))")
        default:
            return transientOrFail(head, what: "asking for the offset")
        }
    }

    private mutating func appended(_ head: ResponseHead, url: String, offset: Int64, length: Int64, declaring: Bool)
        -> UploadDecision
    {
        switch head.status {
        case 200...299:
            if declaring { lengthDeclared = true }
            let end = offset + length
            if let acknowledged = Self.offset(head), acknowledged > end {
                return state.fail("the server acknowledged \(acknowledged) bytes, more than the \(end) sent")
            }
            guard let acknowledged = Self.offset(head), (offset...end).contains(acknowledged) else {
                state = .queryOffset(url: url)
                return .step(reason: "the server did not acknowledge \(end)")
            }
            return reached(acknowledged, at: url)
        case 409:
            state = .queryOffset(url: url)
            return .step(reason: "the server has another offset")
        case 460:
            // The server discarded the piece: send it again from the same offset.
            return .resend(reason: "the server found the checksum of the piece at \(offset) wrong (460)")
        case 404, 410:
            return restart("the server no longer has the upload (\(head.status))")
        case 413:
            return state.fail("the server refused the piece as too large (413); try a smaller --chunk-size")
        default:
            if RetryPolicy.isRetryable(status: head.status) || head.status == 423 { state = .queryOffset(url: url) }
            return transientOrFail(head, what: "appending")
        }
    }

    /// `Upload-Offset` as tus defines it: a non-negative decimal (no sign, nothing else).
    static func offset(_ head: ResponseHead) -> Int64? {
        head.headers["Upload-Offset"].flatMap { ContentLength.decimal($0.trimmingSpaces()) }
    }

    private mutating func transientOrFail(_ head: ResponseHead, what: String) -> UploadDecision {
        if RetryPolicy.isRetryable(status: head.status) || head.status == 423 {
            return .retry(
                reason: "the server answered \(head.status) while \(what)", retryAfter: head.headers["Retry-After"])
        }
        if head.status == 412 {
            return state.fail(
                "the server does not speak tus \(Self.version) (412; it offers "
                    + "\(head.headers["Tus-Version"] ?? "nothing"))"
            )
        }
        return state.fail("the server answered \(head.status) \(head.reason) while \(what)")
    }

    /// The server holds `offset` bytes of the upload at `url`: done once that is all of them and it knows that it is.
    private mutating func reached(_ offset: Int64, at url: String) -> UploadDecision {
        state = .append(url: url, offset: offset)
        resource = url
        return offset == size && lengthKnown && lengthDeclared ? state.complete() : .proceed
    }

    private mutating func restart(_ reason: String) -> UploadDecision {
        expires = nil
        resource = nil
        state = capabilities == nil ? .discover : .create
        return .restarted(reason: reason)
    }
}
