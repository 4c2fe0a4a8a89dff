import FoundationEssentials

/// The resumable-upload protocols a token can name (`upload.protocol`).
public enum UploadProtocol: String, Sendable, Codable, CaseIterable {
    /// draft-ietf-httpbis-resumable-upload (POST + 104, HEAD, PATCH).
    case ietf
    /// tus 1.0.0 (OPTIONS, POST with Upload-Length, HEAD, PATCH, DELETE).
    case tus
    /// One request carrying the whole file; a failure sends it all again.
    case plain
    /// S3 multipart (CreateMultipartUpload, parts in parallel, CompleteMultipartUpload).
    case s3
}

/// What `upload --protocol` asks for: one protocol, or `auto` (the token's, else one OPTIONS probe).
public enum UploadProtocolChoice: String, Sendable, CaseIterable {
    case auto, ietf, tus, plain
}

/// What a response, or a failed exchange, means to an upload. Shared by every protocol.
public enum UploadDecision: Sendable, Equatable {
    /// Go on with the next plan at once.
    case proceed
    /// A protocol step that is not a failure (a version switch, an offset to check first): go on at once
    /// with the next plan, saying nothing.
    case step(reason: String)
    case completed
    /// Transient: wait, then go on with the next plan.
    case retry(reason: String, retryAfter: String?)
    /// The server refused the bytes just sent as corrupt (tus 460): send them again after a backoff
    /// that does not count them as progress, so a link that corrupts every time still gives up.
    case resend(reason: String)
    /// The server no longer has the upload (or never had it): create it anew.
    case restarted(reason: String)
    case fail(reason: String)
    /// The server holds bytes other than the source's (a checksum it echoed, an object's ETag): no retry helps.
    case corrupt(reason: String)
    /// Go on at once, after telling the user each line (parts a resume found changed on the server).
    case noted([String])
}

/// A range of the upload's source that a request carries as its body.
public struct BodyRange: Sendable, Equatable {
    public var offset: Int64
    public var length: Int64

    public init(offset: Int64, length: Int64) {
        self.offset = offset
        self.length = length
    }
}

/// A digest of a request body that the protocol wants sent in a header, e.g. tus's
/// `Upload-Checksum: sha256 <base64>` (S3 parts would use `Content-MD5: <base64>`).
public struct BodyChecksum: Sendable, Equatable {
    public var header: String
    public var algorithm: DigestAlgorithm
    /// Written before the base64 digest in the header's value.
    public var prefix: String

    public init(header: String, algorithm: DigestAlgorithm, prefix: String = "") {
        self.header = header
        self.algorithm = algorithm
        self.prefix = prefix
    }
}

/// One request an upload protocol wants sent.
public struct UploadExchange: Sendable, Equatable {
    public var method: String
    /// Nil: the URL the user gave (a creation or probe).
    public var url: String?
    public var headers: HeaderFields
    public var body: BodyRange?
    public var checksum: BodyChecksum?
    /// A small body built by the machine rather than read from the source (S3's CompleteMultipartUpload XML).
    public var document: [UInt8]?
    /// False: the user's `-H` headers stay off this request (S3 puts them only on the one that creates the object).
    public var userHeaders: Bool

    public init(
        method: String, url: String?, headers: HeaderFields, body: BodyRange? = nil, checksum: BodyChecksum? = nil,
        document: [UInt8]? = nil, userHeaders: Bool = true
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.checksum = checksum
        self.document = document
        self.userHeaders = userHeaders
    }
}

/// Digests of one range of the source that a plan needs instead of a request.
public struct SourceDigests: Sendable, Equatable {
    public var range: BodyRange
    public var algorithms: [DigestAlgorithm]
}

/// What a 1xx response during an upload told.
public enum UploadInformational: Sendable, Equatable {
    case nothing
    /// The upload resource: persist it at once, before the body is through.
    case uploadURL(String)
    /// The server's limit is below the file's size: stop sending.
    case tooLarge(limit: Int64)
}

/// The seam every upload protocol plugs into: a pure state machine (no I/O, no clock) that says which
/// request to send next (`plan()` → `exchange(for:)`) and what each response means (`response`,
/// `exchangeFailed`). `UploadOperation` runs any such machine and owns everything protocols share:
/// token writes, retry and backoff, pause and cancel, events, the source file checks, the checksum of
/// a body, the credentials that stay on the user's origin.
///
/// Adding a protocol means adding a folder beside `IETF/` and `Tus/` with a conforming machine, a case
/// in ``UploadProtocol``, and the fields it must keep across runs as optional token fields written by
/// ``record(into:)`` and read back by its initializer. A machine whose steps are independent (S3's parts)
/// names several at once in ``plans(besides:)``; the operation runs them side by side.
public protocol UploadMachine: Sendable, Equatable {
    associatedtype Plan: Sendable, Equatable

    /// The source's length in bytes.
    var size: Int64 { get }
    /// The next step.
    func plan() -> Plan
    /// The request for `plan`; nil when the plan is to finish.
    func exchange(for plan: Plan) -> UploadExchange?
    /// A 1xx while `plan` runs against `requestURL`.
    mutating func informational(_ head: ResponseHead, requestURL: String) -> UploadInformational
    /// The final response to `plan`.
    mutating func response(_ head: ResponseHead, to plan: Plan) -> UploadDecision
    /// The final response with its body (at most 1 MiB kept) and the digest the request's checksum header carried.
    mutating func response(_ head: ResponseHead, body: [UInt8], checksum: [UInt8]?, to plan: Plan) -> UploadDecision
    /// Steps that may start while `running` are in flight; several when they are independent.
    func plans(besides running: [Plan]) -> [Plan]
    /// Digests of the source that `plan` needs instead of a request (nil: it is a request).
    func digests(for plan: Plan) -> SourceDigests?
    /// The digests ``digests(for:)`` asked for, in its order.
    mutating func digested(_ values: [[UInt8]], for plan: Plan) -> UploadDecision
    /// `plan` ended without a final response (connection lost, stall, timeout).
    mutating func exchangeFailed(_ reason: String, during plan: Plan) -> UploadDecision
    /// Bytes the server is known to hold: the token's checkpoint.
    var acknowledgedBytes: Int64 { get }
    /// False while nothing shows that the server can continue an upload: a retry sends everything.
    var canResume: Bool { get }
    /// Writes what a later run needs (upload URL, protocol fields) into the token.
    func record(into part: inout ResumeToken.UploadPart)
    /// Whether `plan`'s body may go on past its length while it is sent: an append of an open stream,
    /// which then carries what became durable meanwhile instead of ending and starting anew.
    func canGrow(_ plan: Plan) -> Bool
    /// `plan` with its body grown to `length` bytes; the machine's size follows.
    mutating func grow(_ plan: Plan, to length: Int64) -> Plan
    /// True while the server keeps state that a failed upload's token must not forget (an S3 upload to abort).
    var failureKeepsToken: Bool { get }
    /// What a pause message says after "paused".
    var pauseNote: String { get }
}

/// A machine that can send a stream whose length is known only at its end (`upload -`).
public protocol StreamingUploadMachine: UploadMachine {
    /// More of the stream was read (`final`: its end too); throws when the protocol cannot take that much.
    mutating func extend(to newSize: Int64, final: Bool) throws(TransferError)
}

extension IETFStateMachine: StreamingUploadMachine {}
extension TusStateMachine: StreamingUploadMachine {}

extension UploadMachine {
    public mutating func informational(_ head: ResponseHead, requestURL: String) -> UploadInformational { .nothing }
    public func canGrow(_ plan: Plan) -> Bool { false }
    public mutating func grow(_ plan: Plan, to length: Int64) -> Plan { plan }
    public mutating func response(_ head: ResponseHead, body: [UInt8], checksum: [UInt8]?, to plan: Plan) -> UploadDecision {
        response(head, to: plan)
    }
    public func plans(besides running: [Plan]) -> [Plan] { running.isEmpty ? [plan()] : [] }
    public func digests(for plan: Plan) -> SourceDigests? { nil }
    public mutating func digested(_ values: [[UInt8]], for plan: Plan) -> UploadDecision { .proceed }
    public var failureKeepsToken: Bool { false }
    public var pauseNote: String {
        canResume ? "; the server will be asked for its offset on resume" : "; a resume sends the whole file again"
    }
}

/// Resolves a `Location` against the URL of the request it answered (it may be relative).
func resolveLocation(_ location: String?, against requestURL: String) -> String? {
    guard let location, !location.isEmpty else { return nil }
    return URL(string: location, relativeTo: URL(string: requestURL))?.absoluteString
}
