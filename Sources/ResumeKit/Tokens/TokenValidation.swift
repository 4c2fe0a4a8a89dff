/// Checks a decoded token for values that cannot be true, before any reaches a file offset, a request or a
/// path: a user (or a disk fault) may have edited the file. Each violation names the field.
public enum TokenValidation {
    /// A field that cannot be true, and why.
    public struct Violation: Error, Sendable, Equatable, CustomStringConvertible {
        public var field: String
        public var reason: String

        public var description: String { "\(field) \(reason)" }
    }

    /// Throws the first violation found, in the order of the schema.
    public static func check(_ token: ResumeToken) throws(Violation) {
        try checkID(token.id)
        try checkURL(token.url, field: "url", s3Allowed: token.s3 != nil)
        // On bytes: "\r\n" is one Character, so `contains("\r")` would miss it.
        for (i, line) in token.headers.enumerated() where line.utf8.contains(where: { $0 == 13 || $0 == 10 || $0 == 0 })
        {
            throw Violation(field: "headers[\(i)]", reason: "holds a line break or NUL")
        }
        switch token.transfer {
        case .download(let download):
            try check(download)
            if let s3 = download.s3 { try check(s3, field: "s3") }
        case .upload(let upload): try check(upload)
        }
    }

    /// An id names files in `tokens/`: only the characters ``TokenStore/makeID(kind:url:path:)`` writes,
    /// so that no id reaches outside that folder.
    static func checkID(_ id: String) throws(Violation) {
        let allowed = id.allSatisfy { ($0.isASCII && ($0.isLetter || $0.isNumber)) || $0 == "-" || $0 == "_" }
        guard !id.isEmpty, id.utf8.count <= 128, allowed else {
            throw Violation(field: "id", reason: "must be letters, digits, '-' and '_' (at most 128)")
        }
    }

    /// Only http and https (and `s3://` where the token carries its S3 state), as on the command line.
    static func checkURL(_ url: String, field: String, s3Allowed: Bool = false) throws(Violation) {
        if s3Allowed, url.lowercased().hasPrefix("s3://") { return }
        do {
            try URLCheck.validate(url)
        } catch {
            throw Violation(field: field, reason: "is not an http or https URL ('\(url.prefix(80))')")
        }
    }

    static func check(_ d: ResumeToken.DownloadPart) throws(Violation) {
        guard d.path.hasPrefix("/"), !d.path.contains("\0") else {
            throw Violation(field: "download.path", reason: "must be an absolute path")
        }
        if let url = d.effectiveURL { try checkURL(url, field: "download.effectiveURL") }
        try nonNegative(d.committedBytes, "download.committedBytes")
        if let total = d.totalBytes {
            try nonNegative(total, "download.totalBytes")
            guard d.committedBytes <= total else {
                throw Violation(
                    field: "download.committedBytes",
                    reason: "is \(d.committedBytes), beyond download.totalBytes \(total)")
            }
        }
        if let sum = d.expectedSHA256, sum.utf8.count != 64 || !sum.allSatisfy({ $0.isASCII && $0.isHexDigit }) {
            throw Violation(field: "download.expectedSHA256", reason: "must be 64 hex digits")
        }
        if let onChange = d.onChange, DownloadStateMachine.OnChange(rawValue: onChange) == nil {
            throw Violation(field: "download.onChange", reason: "must be restart or fail, not '\(onChange.prefix(40))'")
        }
        for (i, mirror) in (d.mirrors ?? []).enumerated() {
            try checkURL(mirror.url, field: "download.mirrors[\(i)].url")
        }
        if let pieces = d.pieces {
            let digits = DigestAlgorithm(rawValue: String(pieces.algorithm.filter { $0 != "-" })).map {
                $0.digest([]).count * 2
            }
            guard pieces.length > 0, digits != nil,
                pieces.hashes.allSatisfy({ $0.utf8.count == digits && $0.allSatisfy(\.isHexDigit) })
            else {
                throw Violation(
                    field: "download.pieces", reason: "needs a length, a known algorithm and its hex hashes")
            }
        }
        for (value, field) in [(d.connections, "connections"), (d.perMirror, "perMirror")] {
            if let value, !(1...16).contains(value) {
                throw Violation(field: "download.\(field)", reason: "must be 1 to 16")
            }
        }
        guard let segments = d.segments else { return }
        if segments.contains(where: {
            ($0.from ?? []).contains { !(d.mirrors ?? [.init(url: "")]).indices.contains($0) }
        }) {
            throw Violation(field: "download.segments", reason: "name a mirror download.mirrors does not list")
        }
        guard let total = d.totalBytes else {
            throw Violation(field: "download.segments", reason: "need download.totalBytes")
        }
        var next: Int64 = 0
        for (i, s) in segments.enumerated() {
            let field = "download.segments[\(i)]"
            try nonNegative(s.start, field + ".start")
            try nonNegative(s.committed, field + ".committed")
            guard s.start >= next else {
                throw Violation(
                    field: field + ".start", reason: "is \(s.start): segments must be in order without overlap")
            }
            guard s.end >= s.start, s.end < total else {
                throw Violation(field: field + ".end", reason: "is \(s.end): must lie in \(s.start)..<\(total)")
            }
            guard s.committed <= s.length else {
                throw Violation(
                    field: field + ".committed", reason: "is \(s.committed), beyond the segment's \(s.length) bytes")
            }
            next = s.end + 1
        }
    }

    /// The ledger must cover what a replay is checked against: every complete block below `durable`, and
    /// the open block's bytes (``ResumeToken/StreamState/tail``) wherever the spool may have lost them.
    static func check(_ stream: ResumeToken.StreamState) throws(Violation) {
        let ledger = stream.ledger
        guard ledger.blockSize > 0 else {
            throw Violation(field: "upload.stream.ledger.blockSize", reason: "must be positive")
        }
        guard Int64(ledger.blocks.count) >= stream.durable / ledger.blockSize else {
            throw Violation(
                field: "upload.stream.ledger.blocks",
                reason:
                    "holds \(ledger.blocks.count) blocks, fewer than the \(stream.durable / ledger.blockSize) complete "
                    + "ones below upload.stream.durable"
            )
        }
        guard stream.start % ledger.blockSize == 0 else {
            throw Violation(
                field: "upload.stream.start",
                reason: "is \(stream.start), not a multiple of the ledger's block size \(ledger.blockSize)")
        }
        if let synced = stream.synced {
            try nonNegative(synced, "upload.stream.synced")
            guard synced <= stream.durable else {
                throw Violation(
                    field: "upload.stream.synced",
                    reason: "is \(synced), beyond upload.stream.durable \(stream.durable)")
            }
        }
        if !stream.ended, stream.kept < stream.durable, stream.durable % ledger.blockSize != 0, stream.tail == nil {
            throw Violation(
                field: "upload.stream.tail",
                reason: "is missing: the bytes after upload.stream.synced could not be checked")
        }
    }

    /// The partial uploads cover the file from its first byte to its last, in order, none empty, each offset
    /// within its range; every URL is http or https.
    static func check(_ concat: ResumeToken.TusConcat, size: Int64) throws(Violation) {
        guard !concat.partials.isEmpty else { throw Violation(field: "upload.concat.partials", reason: "is empty") }
        var next: Int64 = 0
        for (i, partial) in concat.partials.enumerated() {
            let field = "upload.concat.partials[\(i)]"
            guard partial.start == next else {
                throw Violation(
                    field: field + ".start", reason: "is \(partial.start), not \(next) (the previous range's end)")
            }
            guard partial.length > 0, partial.length <= size - next else {
                throw Violation(field: field + ".length", reason: "must be positive and within upload.source.size")
            }
            guard (0...partial.length).contains(partial.offset) else {
                throw Violation(field: field + ".offset", reason: "is \(partial.offset), outside 0...\(partial.length)")
            }
            if let url = partial.url { try checkURL(url, field: field + ".url") }
            next += partial.length
        }
        guard next == size else {
            throw Violation(
                field: "upload.concat.partials", reason: "cover \(next) bytes, not upload.source.size \(size)")
        }
        if let url = concat.final { try checkURL(url, field: "upload.concat.final") }
    }

    static func check(_ u: ResumeToken.UploadPart) throws(Violation) {
        if let url = u.uploadURL { try checkURL(url, field: "upload.uploadURL") }
        try nonNegative(u.source.size, "upload.source.size")
        try nonNegative(u.acknowledgedBytes, "upload.acknowledgedBytes")
        if let stream = u.stream {
            try nonNegative(stream.start, "upload.stream.start")
            guard stream.durable >= stream.start else {
                throw Violation(
                    field: "upload.stream.durable",
                    reason: "is \(stream.durable), below upload.stream.start \(stream.start)")
            }
            guard stream.spoolMax > 0 else {
                throw Violation(field: "upload.stream.spoolMax", reason: "must be positive")
            }
            try check(stream)
            guard u.acknowledgedBytes <= stream.durable else {
                throw Violation(
                    field: "upload.acknowledgedBytes",
                    reason: "is \(u.acknowledgedBytes), beyond the \(stream.durable) bytes of the stream read")
            }
            // An ended stream skips the spool's last fsync only when the server holds every byte.
            guard !stream.ended || stream.kept == stream.durable || u.acknowledgedBytes == stream.durable else {
                throw Violation(
                    field: "upload.stream.synced",
                    reason: "is \(stream.synced ?? 0): the spool lacks bytes the server has not acknowledged")
            }
        } else if u.acknowledgedBytes > u.source.size {
            throw Violation(
                field: "upload.acknowledgedBytes",
                reason: "is \(u.acknowledgedBytes), beyond upload.source.size \(u.source.size)")
        }
        if let concat = u.concat { try check(concat, size: u.source.size) }
        if let s3 = u.s3 {
            try check(s3, field: "upload.s3")
            if let parts = s3.parts {
                var seen = Set<Int>()
                for (i, part) in parts.enumerated() {
                    let field = "upload.s3.parts[\(i)]"
                    guard (1...10_000).contains(part.number) else {
                        throw Violation(field: field + ".number", reason: "must lie in 1...10000")
                    }
                    guard seen.insert(part.number).inserted else {
                        throw Violation(field: field + ".number", reason: "\(part.number) appears twice")
                    }
                    guard part.size >= 0, part.size <= u.source.size else {
                        throw Violation(
                            field: field + ".size", reason: "is \(part.size): must lie in 0...\(u.source.size)")
                    }
                }
            }
        }
    }

    static func check(_ s3: ResumeToken.S3State, field: String) throws(Violation) {
        try checkURL(s3.endpoint, field: field + ".endpoint")
        if let size = s3.partSize, size <= 0 { throw Violation(field: field + ".partSize", reason: "must be positive") }
    }

    private static func nonNegative(_ value: Int64, _ field: String) throws(Violation) {
        guard value >= 0 else { throw Violation(field: field, reason: "is \(value): must not be negative") }
    }
}
