/// The plan of a segmented download (`--connections N`), pure: whether a server allows one and how to split
/// the file. A segment's answers are judged by ``DownloadStateMachine``, bounded to the segment.
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

    /// Splits `total` bytes into runs of whole `unit`s (a Metalink's pieces, or a mirror download's chunks) of at
    /// least ``minimumSegment`` bytes and at most 1,024 runs: a token names each with its committed count.
    public static func split(total: Int64, runsOf unit: Int64) -> [ResumeToken.Segment] {
        let units = (total + unit - 1) / unit
        let run = max((minimumSegment + unit - 1) / unit, (units + 1023) / 1024) * unit
        return stride(from: 0, to: total, by: Int(run)).map {
            ResumeToken.Segment(start: $0, end: min(total, $0 + run) - 1)
        }
    }
}
