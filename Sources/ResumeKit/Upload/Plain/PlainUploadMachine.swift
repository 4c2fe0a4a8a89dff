/// A server without resumable uploads (`--protocol plain`): one POST carrying the whole file, no draft
/// or tus fields. A failed attempt can only be followed by the whole file again.
public struct PlainUploadMachine: UploadMachine {
    public enum Plan: Sendable, Equatable {
        case send
        case finished
    }

    public let size: Int64
    private var done = false

    public init(size: Int64) { self.size = size }

    public func plan() -> Plan { done ? .finished : .send }

    public func exchange(for plan: Plan) -> UploadExchange? {
        plan == .send
            ? UploadExchange(method: "POST", url: nil, headers: [:], body: BodyRange(offset: 0, length: size)) : nil
    }

    public mutating func response(_ head: ResponseHead, to plan: Plan) -> UploadDecision {
        if head.isSuccess {
            done = true
            return .completed
        }
        if RetryPolicy.isRetryable(status: head.status) {
            return .retry(reason: "the server answered \(head.status)", retryAfter: head.headers["Retry-After"])
        }
        return .fail(reason: "the server answered \(head.status) \(head.reason)")
    }

    public mutating func exchangeFailed(_ reason: String, during plan: Plan) -> UploadDecision {
        .retry(reason: reason + "; the server cannot resume uploads, so the whole file is sent again", retryAfter: nil)
    }

    public var acknowledgedBytes: Int64 { done ? size : 0 }
    public var canResume: Bool { false }

    public func record(into part: inout ResumeToken.UploadPart) {
        part.wire = .plain
        part.uploadURL = nil
    }
}
