/// The protocol rules of a segmented download (`--connections N`), pure like the state machine they
/// extend: whether a server allows one, how to split the file, and what a segment's response means.
public enum SegmentRules {
    /// The smallest segment worth its own connection.
    public static let minimumSegment: Int64 = 1 << 20

    /// The resource, if the answer to a HEAD allows parallel ranges: a strong validator, a known length,
    /// `Accept-Ranges: bytes`, no content coding. Otherwise the reason it does not.
    public static func probe(_ head: ResponseHead) -> Result<DownloadStateMachine.Resource, Refusal> {
        guard head.isSuccess else { return .failure(.status(head.status)) }
        let resource = DownloadStateMachine.resource(from: head, totalBytes: ContentLength(head.headers).value)
        guard head.headers["Accept-Ranges"]?.lowercased().contains("bytes") == true else { return .failure(.noRanges) }
        guard resource.validator != nil else { return .failure(.noValidator) }
        guard let total = resource.totalBytes, total > 0 else { return .failure(.unknownLength) }
        return .success(resource)
    }

    public enum Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        case status(Int)
        case noRanges
        case noValidator
        case unknownLength

        public var description: String {
            switch self {
            case .status(let s): "the server answered \(s) to HEAD"
            case .noRanges: "the server does not support ranges"
            case .noValidator: "the server gives no strong validator"
            case .unknownLength: "the server does not say how long the file is"
            }
        }
    }

    /// Splits `total` bytes into at most `connections` segments of at least `minimumSegment` bytes.
    public static func split(total: Int64, connections: Int) -> [ResumeToken.Segment] {
        let count = Int(max(1, min(Int64(connections), total / minimumSegment)))
        let base = total / Int64(count)
        return (0..<count).map { i in
            let start = Int64(i) * base
            let end = i == count - 1 ? total - 1 : start + base - 1
            return ResumeToken.Segment(start: start, end: end)
        }
    }

    /// The range a segment asks for when `written` of its bytes are on disk: from up to
    /// ``DownloadStateMachine/overlap`` bytes before them (within the segment), whose comparison with the
    /// disk guards against a validator that did not change when the bytes did.
    public static func resumeStart(segmentStart: Int64, written: Int64) -> Int64 {
        segmentStart + DownloadStateMachine.overlapStart(committed: written)
    }

    /// What a segment's overlap that differs from the disk means.
    public static func overlapDiffers(at offset: Int64) -> Decision {
        .changed(DownloadStateMachine.overlapReason(at: offset))
    }

    public enum Decision: Sendable, Equatable {
        /// Write the body at the requested offset.
        case write
        /// The representation is not the one we started with; every segment is void.
        case changed(String)
        case retry(status: Int, retryAfter: String?)
        case fail(DownloadStateMachine.Failure)
    }

    /// Interprets the answer to `Range: bytes=from-to` with `If-Range`.
    public static func evaluate(_ head: ResponseHead, from: Int64, to: Int64, resource: DownloadStateMachine.Resource) -> Decision {
        switch head.status {
        case 206:
            guard let range = head.headers["Content-Range"].flatMap(ContentRange.init), let bytes = range.range else {
                return .changed("the server sent a part without a usable Content-Range")
            }
            if let etag = head.headers["ETag"], let stored = resource.etag, etag != stored {
                return .changed("the file changed on the server")
            }
            guard range.completeLength == resource.totalBytes else { return .changed("the file on the server has another length now") }
            guard bytes.lowerBound == from, bytes.upperBound == to else {
                return .changed("the server answered bytes \(bytes.lowerBound)-\(bytes.upperBound), not \(from)-\(to)")
            }
            return .write
        case 200:
            return .changed("the file changed on the server")
        case 412, 416:
            return .changed("the file changed on the server")
        default:
            if RetryPolicy.isRetryable(status: head.status) {
                return .retry(status: head.status, retryAfter: head.headers["Retry-After"])
            }
            return .fail(.status(head.status, reason: head.reason))
        }
    }
}
