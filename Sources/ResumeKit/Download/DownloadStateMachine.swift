/// The download protocol rules, with no I/O and no clock: which request to send for the bytes we
/// have, and what a response head means for them (docs/guarantees.md "Downloads", RFC 9110 §13.1.5, §14,
/// §15.3.7).
public struct DownloadStateMachine: Sendable, Equatable {
    /// What the server told us about the representation we are fetching.
    public struct Resource: Sendable, Equatable {
        public var etag: String?
        public var lastModified: String?
        /// The `If-Range` value to resume with; nil when the server gave no strong validator.
        public var validator: String?
        public var totalBytes: Int64?
        /// SHA-256 from `Repr-Digest`, when the server sent one.
        public var reprDigestSHA256: [UInt8]?

        public init(
            etag: String? = nil, lastModified: String? = nil, validator: String? = nil, totalBytes: Int64? = nil,
            reprDigestSHA256: [UInt8]? = nil
        ) {
            self.etag = etag
            self.lastModified = lastModified
            self.validator = validator
            self.totalBytes = totalBytes
            self.reprDigestSHA256 = reprDigestSHA256
        }
    }

    public enum OnChange: String, Sendable, Equatable, CaseIterable {
        /// Start over from zero with the new content.
        case restart
        /// Stop: the user wants to know.
        case fail
    }

    /// The next request to send.
    public enum Plan: Sendable, Equatable {
        /// GET; with `offset > 0` it carries `Range` and `If-Range`.
        case fetch(offset: Int64, headers: HeaderFields)
        /// The resume cannot be validated and the policy says stop.
        case fail(Failure)
    }

    /// What to do with the response to a fetch.
    public enum Decision: Sendable, Equatable {
        /// Keep the first `offset` bytes of the `.part` file and write this body after them.
        case write(from: Int64, restarted: String?)
        /// This body is unusable (a range of something else); fetch again from zero.
        case refetchFromZero(reason: String)
        /// A transient refusal; try again, after `retryAfter` seconds when the server said so.
        case retry(status: Int, retryAfter: String?)
        /// The answer cannot be true (a length no number holds, two lengths, a 206 whose length contradicts
        /// its range): this attempt fails and is retried; its body is never taken as the file.
        case malformed(String)
        case fail(Failure)
    }

    public enum Failure: Error, Sendable, Equatable {
        /// A final status that no retry will change (404, 403, 401 …).
        case status(Int, reason: String)
        /// The content changed on the server and `--on-change fail` was given.
        case changed(String)
    }

    public private(set) var resource: Resource?
    public let onChange: OnChange

    public init(resource: Resource? = nil, onChange: OnChange = .restart) {
        self.resource = resource
        self.onChange = onChange
    }

    /// How many bytes before the resume point a resume asks for again, to compare them with the ones on
    /// disk. Validators can lie: nginx's ETag is mtime-size, shared by two files of one size written in the
    /// same second, and a CDN may keep an old ETag for new bytes (RFC 9110 §8.8.3: entity tags compare
    /// only within one resource). The overlap is the only check that looks at the bytes themselves.
    public static let overlap: Int64 = 64 << 10

    /// Where a resume of `committed` bytes starts asking: up to ``overlap`` bytes before them.
    public static func overlapStart(committed: Int64) -> Int64 { committed - min(committed, overlap) }

    /// The request that continues from `committed` bytes, ``overlap`` bytes early (see ``overlapDiffers(at:)``).
    public func plan(committed: Int64) -> Plan {
        guard committed > 0, let resource else { return .fetch(offset: 0, headers: [:]) }
        guard let validator = resource.validator else {
            let why = "the server gave no strong validator, so the partial data cannot be checked"
            return onChange == .fail ? .fail(.changed(why)) : .fetch(offset: 0, headers: [:])
        }
        let from = Self.overlapStart(committed: committed)
        return .fetch(offset: from, headers: ["Range": "bytes=\(from)-", "If-Range": validator])
    }

    /// The request for the rest of a segment (`bound`, of a file whose validator is known) when `committed`
    /// of its bytes are held: from up to ``overlap`` bytes before them, within the segment.
    public func plan(committed: Int64, within bound: ClosedRange<Int64>) -> Plan {
        let from = bound.lowerBound + Self.overlapStart(committed: committed)
        return .fetch(
            offset: from,
            headers: ["Range": "bytes=\(from)-\(bound.upperBound)", "If-Range": resource?.validator ?? ""])
    }

    /// The bytes re-fetched before the resume point differ from the ones on disk at `offset`: whatever the
    /// validator says, the file changed, and appending would splice two files.
    public mutating func overlapDiffers(at offset: Int64) -> Decision {
        changed(Self.overlapReason(at: offset))
    }

    /// Why a resume whose overlap differs from the disk counts as a changed file (also for segments).
    static func overlapReason(at offset: Int64) -> String {
        "the file changed on the server (its bytes at \(offset) differ from those already downloaded, though its "
            + "validator did not change)"
    }

    /// Interprets the final response head to a fetch that started at `offset`. A segment's fetch is bounded
    /// (`through` its last byte): then only that exact part of the same file will do, and anything else
    /// means the file changed.
    public mutating func evaluate(_ head: ResponseHead, requestedOffset offset: Int64, through end: Int64? = nil)
        -> Decision
    {
        if head.isSuccess, case .invalid(let reason) = ContentLength(head.headers) { return .malformed(reason) }
        switch head.status {
        case 206:
            return evaluatePartial(head, offset: offset, end: end)
        case 200...299 where end != nil:
            return changed("the file changed on the server")
        case 200...299:
            let fresh = Self.resource(
                from: head, totalBytes: head.status == 204 ? 0 : ContentLength(head.headers).value)
            var restarted: String?
            if offset > 0 {
                if let old = resource, old.validator != nil, old.etag == fresh.etag,
                    old.lastModified == fresh.lastModified
                {
                    restarted = "the server ignored the range request"
                } else if resource?.validator == nil {
                    restarted = "no strong validator to resume safely"
                } else {
                    restarted = "the file changed on the server"
                    if onChange == .fail { return .fail(.changed(restarted!)) }
                }
            }
            resource = fresh
            return .write(from: 0, restarted: restarted)
        case 416:
            // A resume asks from before the bytes it holds, so a satisfiable file never answers 416.
            guard offset > 0 || end != nil, resource != nil else { return .fail(.status(416, reason: head.reason)) }
            return changed("the file on the server has another length now")
        case 412:
            return changed("the file changed on the server")
        default:
            if RetryPolicy.isRetryable(status: head.status) {
                return .retry(status: head.status, retryAfter: head.headers["Retry-After"])
            }
            return .fail(.status(head.status, reason: head.reason))
        }
    }

    private mutating func evaluatePartial(_ head: ResponseHead, offset: Int64, end: Int64?) -> Decision {
        guard let range = head.headers["Content-Range"].flatMap(ContentRange.init), let bytes = range.range else {
            return .refetchFromZero(reason: "the server sent a partial response without a usable Content-Range")
        }
        // no +1: upperBound may be Int64.max
        if let length = ContentLength(head.headers).value, length - 1 != bytes.upperBound - bytes.lowerBound {
            return .malformed(
                "the server's Content-Length \(length) contradicts its Content-Range "
                    + "\(bytes.lowerBound)-\(bytes.upperBound)"
            )
        }
        if offset == 0 && end == nil {
            // We asked for everything; a 206 from zero carrying the complete length is as good as a 200.
            guard bytes.lowerBound == 0, let total = range.completeLength, bytes.upperBound == total - 1 else {
                return .refetchFromZero(reason: "the server sent a part we did not ask for")
            }
            resource = Self.resource(from: head, totalBytes: total)
            return .write(from: 0, restarted: nil)
        }
        guard let resource else { return .refetchFromZero(reason: "no record of the resource") }
        if let etag = head.headers["ETag"], let stored = resource.etag, etag != stored {
            return changed("the file changed on the server")
        }
        if let stored = resource.totalBytes, range.completeLength != stored {
            return changed("the file on the server has another length now")
        }
        if let end, bytes != offset...end {
            return changed("the server answered bytes \(bytes.lowerBound)-\(bytes.upperBound), not \(offset)-\(end)")
        }
        guard bytes.lowerBound == offset else {
            return .refetchFromZero(reason: "the server answered from byte \(bytes.lowerBound), not \(offset)")
        }
        return .write(from: offset, restarted: nil)
    }

    private mutating func changed(_ reason: String) -> Decision {
        if onChange == .fail { return .fail(.changed(reason)) }
        resource = nil
        return .refetchFromZero(reason: reason)
    }

    /// How a GET ended, the same for a file and a pipe.
    enum Verdict: Equatable {
        case done
        /// Cut short on this side (a stop, or a first body that handed over): plan again.
        case again
        /// For the retrier.
        case fault(Fault)
        case refetchFromZero(String)
        case fail(Failure)
    }

    /// Joins how the exchange ended with what its head was judged (`decision`); `held` is the length of
    /// the data now on this side, complete at `expected` bytes (a segment's length; else the file's).
    func verdict(
        _ outcome: ExchangeOutcome, _ decision: Decision?, held: Int64, expected: Int64? = nil, stallTimeout: Int
    ) -> Verdict {
        switch outcome {
        case .cancelled: return .again
        case .stalled: return .fault(.stalled(seconds: stallTimeout))
        case .failed(let failure): return .fault(Fault(failure))
        case .completed, .abortedByDelegate:
            switch decision {
            case .write?:
                if outcome == .abortedByDelegate { return .again }
                if let total = expected ?? resource?.totalBytes, held != total {
                    return .fault(.lost("the connection closed at byte \(held) of \(total)"))
                }
                return .done
            case .refetchFromZero(let reason)?: return .refetchFromZero(reason)
            case .retry(let status, let after)?: return .fault(.answered(status, retryAfter: after))
            case .malformed(let reason)?: return .fault(.lost(reason))
            case .fail(let failure)?: return .fail(failure)
            case nil: return .fault(.lost("the server sent no response"))
            }
        }
    }

    static func resource(from head: ResponseHead, totalBytes: Int64?) -> Resource {
        let h = head.headers
        let validator = RangeValidator.select(etag: h["ETag"], lastModified: h["Last-Modified"], date: h["Date"])
        // A body the server encoded on the fly has no stable byte offsets.
        let encoded = h["Content-Encoding"].map { !$0.isEmpty && $0.lowercased() != "identity" } ?? false
        return Resource(
            etag: h["ETag"], lastModified: h["Last-Modified"], validator: encoded ? nil : validator?.headerValue,
            totalBytes: totalBytes,
            reprDigestSHA256: StructuredField.byteSequenceDictionary(h["Repr-Digest"])["sha-256"])
    }
}

extension ResumeToken.DownloadPart {
    /// Records what the server said of the file (nil: nothing yet), and its `Repr-Digest` as the expected
    /// SHA-256 unless `--checksum` gave one.
    mutating func adopt(_ resource: DownloadStateMachine.Resource?, effectiveURL: String?) {
        etag = resource?.etag
        lastModified = resource?.lastModified
        validator = resource?.validator
        totalBytes = resource?.totalBytes
        self.effectiveURL = effectiveURL
        if let digest = resource?.reprDigestSHA256, digest.count == 32, expectedSHA256 == nil {
            expectedSHA256 = digest.hex
        }
    }
}
