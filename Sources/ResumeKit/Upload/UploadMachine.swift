import FoundationEssentials

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
    /// Where the upload ended up when that is not the URL the user gave (tus's final upload); nil: that URL.
    var location: String? { get }
}

extension UploadMachine {
    public mutating func informational(_ head: ResponseHead, requestURL: String) -> UploadInformational { .nothing }
    public func canGrow(_ plan: Plan) -> Bool { false }
    public mutating func grow(_ plan: Plan, to length: Int64) -> Plan { plan }
    public mutating func response(_ head: ResponseHead, body: [UInt8], checksum: [UInt8]?, to plan: Plan)
        -> UploadDecision
    {
        response(head, to: plan)
    }
    public func plans(besides running: [Plan]) -> [Plan] { running.isEmpty ? [plan()] : [] }
    public func digests(for plan: Plan) -> SourceDigests? { nil }
    public mutating func digested(_ values: [[UInt8]], for plan: Plan) -> UploadDecision { .proceed }
    public var failureKeepsToken: Bool { false }
    public var location: String? { nil }
    public var pauseNote: String {
        canResume ? "; the server will be asked for its offset on resume" : "; a resume sends the whole file again"
    }
}

/// Where an upload that a server keeps by URL stands (the draft, tus).
public enum ResumableUploadState: Sendable, Equatable {
    /// Ask the server what it offers (tus's OPTIONS).
    case discover
    /// No upload resource known: the next request creates one.
    case create
    /// The resource exists but our view of its offset is stale: HEAD it.
    case queryOffset(url: String)
    /// Append from `offset` (PATCH).
    case append(url: String, offset: Int64)
    case done

    var uploadURL: String? {
        switch self {
        case .queryOffset(let url), .append(let url, _): url
        case .discover, .create, .done: nil
        }
    }

    /// Bytes the server holds of an upload of `size`.
    func acknowledged(of size: Int64) -> Int64 {
        switch self {
        case .append(_, let offset): offset
        case .done: size
        case .discover, .create, .queryOffset: 0
        }
    }

    mutating func complete() -> UploadDecision {
        self = .done
        return .completed
    }

    /// Ends the upload with `reason`.
    mutating func fail(_ reason: String) -> UploadDecision {
        self = .done
        return .fail(reason: reason)
    }
}

/// Resolves a `Location` against the URL of the request it answered (it may be relative).
func resolveLocation(_ location: String?, against requestURL: String) -> String? {
    guard let location, !location.isEmpty else { return nil }
    return URL(string: location, relativeTo: URL(string: requestURL))?.absoluteString
}
