import NIOHTTP1

/// The head of a GET or HEAD answer with a representation of `size` bytes — a file, or an object of
/// `--store s3://` — and the bytes its body carries: single ranges and `If-Range` per ``RangeRequest``,
/// the validators, and the length. One place, so that both stores answer alike.
struct RangedAnswer {
    var status: HTTPResponseStatus
    var bytes: Range<Int64>
    /// The connection's own fields (Date, Connection) given to `init`, then the answer's.
    var fields: [(String, String)]

    init(
        method: HTTPMethod, headers request: HTTPHeaders, size: Int64, etag: String, lastModified: String,
        lastModifiedIsStrong: Bool,
        after connectionFields: consuming [(String, String)]
    ) {
        let decision =
            method == .GET
            ? RangeRequest.decide(
                range: request["range"].first, ifRange: request["if-range"].first, length: size, etag: etag,
                lastModified: lastModified, lastModifiedIsStrong: lastModifiedIsStrong)
            : .full
        // One array for the whole head, grown once.
        var fields = connectionFields
        fields.reserveCapacity(fields.count + 8)
        fields.append(("ETag", etag))
        if !lastModified.isEmpty { fields.append(("Last-Modified", lastModified)) }
        fields.append(("Accept-Ranges", "bytes"))
        switch decision {
        case .full:
            status = .ok
            bytes = 0..<size
        case .partial(let first, let last):
            status = .partialContent
            bytes = first..<(last + 1)
            fields.append(("Content-Range", "bytes \(first)-\(last)/\(size)"))
        case .unsatisfiable:
            status = .rangeNotSatisfiable
            bytes = 0..<0
            fields.append(("Content-Range", "bytes */\(size)"))
        }
        if status != .rangeNotSatisfiable { fields.append(("Content-Type", "application/octet-stream")) }
        fields.append(("Content-Length", String(bytes.count)))
        self.fields = fields
    }
}
