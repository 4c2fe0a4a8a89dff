/// How an object is joined on S3 from other objects, in order (`serve`'s tus concatenation on S3): S3 takes
/// no part under its minimum but the last, and copies a part (UploadPartCopy) from one object only, at most
/// ``MultipartPlan/maximumPartSize`` of it. A stretch of one source at least `minimum` long that starts a
/// part is copied inside S3; shorter stretches are read through the caller and sent together, `minimum`
/// bytes a part. Pure.
public enum S3JoinPlan {
    public struct Slice: Equatable, Sendable {
        /// Which source, by its place in the order.
        public var source: Int
        public var range: Range<Int64>

        public init(source: Int, range: Range<Int64>) {
            self.source = source
            self.range = range
        }
    }

    public enum Part: Equatable, Sendable {
        case copy(Slice)
        case send([Slice])

        public var slices: [Slice] {
            switch self {
            case .copy(let slice): [slice]
            case .send(let slices): slices
            }
        }

        public var size: Int64 { slices.reduce(0) { $0 + Int64($1.range.count) } }
    }

    /// The parts, in order, of sources of `sizes`.
    public static func parts(_ sizes: [Int64], minimum: Int64) -> [Part] {
        var parts: [Part] = []
        var held: [Slice] = []
        var heldSize: Int64 = 0
        for (index, size) in sizes.enumerated() {
            var start: Int64 = 0
            while start < size {
                let left = size - start
                if heldSize == 0 && left >= minimum {
                    // In equal shares of at most the largest part, none under the minimum.
                    let count = (left + MultipartPlan.maximumPartSize - 1) / MultipartPlan.maximumPartSize
                    for share in 0..<count {
                        let range = start + left * share / count..<start + left * (share + 1) / count
                        parts.append(.copy(Slice(source: index, range: range)))
                    }
                    start = size
                } else {
                    let take = min(left, minimum - heldSize)
                    held.append(Slice(source: index, range: start..<start + take))
                    heldSize += take
                    start += take
                    if heldSize == minimum {
                        parts.append(.send(held))
                        held = []
                        heldSize = 0
                    }
                }
            }
        }
        if !held.isEmpty || parts.isEmpty { parts.append(.send(held)) }
        return parts
    }
}
