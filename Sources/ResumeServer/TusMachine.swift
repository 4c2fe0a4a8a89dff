import NIOHTTP1

/// The server side of tus 1.0.0 — core, creation, creation-with-upload, creation-defer-length,
/// termination, expiration, checksum, concatenation — as answers to request heads and records. Pure (no
/// I/O, no clock), like ``DraftMachine``: ``UploadHandler`` runs it over the upload store, and the unit
/// tests check each MUST of the protocol's text on it, one by one.
///
/// A finished upload keeps answering at its URL until it expires: a client whose last answer was
/// lost learns there that it finished, instead of a 404 that would make it start over.
enum TusMachine {
    static let version = "1.0.0"
    /// Where upload URLs live; below it every path is an upload id.
    static let prefix = "/tus_upload/"
    static let extensions = [
        "creation", "creation-with-upload", "creation-defer-length", "termination", "expiration", "checksum",
        "concatenation",
    ].joined(separator: ",")
    static let allowed = "OPTIONS, POST, HEAD, PATCH, DELETE"
    static let bodyType = "application/offset+octet-stream"

    typealias Field = UploadAnswer.Field
    typealias Answer = UploadAnswer

    struct Creation: Equatable {
        /// `nil`: deferred (`Upload-Defer-Length: 1`), given by a later PATCH.
        var length: Int64?
        var metadata: String?
        /// creation-with-upload: the POST carries the first bytes.
        var withBody: Bool
        var checksum: String?
        /// concatenation: `Upload-Concat: partial`.
        var partial = false
    }

    /// concatenation: a final upload (`Upload-Concat: final;URL…`) of these partial uploads, in order.
    struct Final: Equatable {
        var parts: [String]
        var metadata: String?
    }

    /// A PATCH; its `length` is creation-defer-length's, given once it is known.
    typealias Append = UploadRequest.Append

    enum Request: Equatable {
        /// Not a tus request: it passes on to the other handlers.
        case notTus
        /// Answered from the head alone.
        case answer(Answer)
        case options
        case create(Creation)
        case concatenate(Final)
        case offset(id: String)
        case append(Append)
        case terminate(id: String)
    }

    // MARK: Requests

    /// What `method target` with `headers` asks for (`method` after ``MethodOverride``, as every handler sees it).
    static func classify(method: HTTPMethod, target: String, headers: HTTPHeaders, maxSize: Int64?) -> Request {
        // Most requests are downloads: one look at the target's bytes settles those. (The prefix is ASCII,
        // which no other character is canonically equivalent to, so a target whose bytes do not start
        // with it does not start with it as Characters either.)
        if method != .OPTIONS && method != .POST && !target.utf8.starts(with: prefix.utf8) { return .notTus }
        let path = target.prefix { $0 != "?" && $0 != "#" }
        let underPrefix = path.hasPrefix(prefix)
        let isDraft = !headers["upload-draft-interop-version"].isEmpty
        guard underPrefix || (method == .OPTIONS && !isDraft) || (method == .POST && !headers["tus-resumable"].isEmpty)
        else {
            return .notTus
        }
        // Core: OPTIONS is answered whatever its Tus-Resumable says ("the Server MUST ignore the header").
        if method == .OPTIONS { return .options }
        guard headers["tus-resumable"].first?.trimmingSpaces == version else {
            return .answer(answer(412, [Field("Tus-Version", version)]))
        }
        let id = String(path.dropFirst(prefix.count).prefix { $0 != "/" })
        switch method {
        case .POST where !underPrefix:
            return creation(headers, maxSize: maxSize)
        case .HEAD:
            return .offset(id: id)
        case .PATCH:
            guard mediaType(headers) == bodyType else { return .answer(answer(415)) }
            guard let offset = FieldValue.integer(headers["upload-offset"].first) else { return .answer(answer(400)) }
            var length: Int64?
            if let raw = headers["upload-length"].first {
                guard let parsed = FieldValue.integer(raw) else { return .answer(answer(400)) }
                length = parsed
            }
            let checksum = headers["upload-checksum"].first
            if let checksum, TusChecksum(header: checksum) == nil { return .answer(answer(400)) }
            return .append(Append(id: id, offset: offset, length: length, checksum: checksum))
        case .DELETE:
            return .terminate(id: id)
        default:
            return .answer(answer(405, [Field("Allow", allowed)]))
        }
    }

    private static func creation(_ headers: HTTPHeaders, maxSize: Int64?) -> Request {
        let concat = headers["upload-concat"].first?.trimmingSpaces
        if let concat, concat.hasPrefix("final;") { return final(concat.dropFirst(6), headers) }
        guard concat == nil || concat == "partial" else { return .answer(answer(400)) }
        let lengthField = headers["upload-length"].first
        let deferField = headers["upload-defer-length"].first
        let length: Int64?
        switch (lengthField, deferField) {
        case (let raw?, nil):
            guard let parsed = FieldValue.integer(raw) else { return .answer(answer(400)) }
            length = parsed
        case (nil, let raw?):
            // "Its value MUST be 1."
            guard raw.trimmingSpaces == "1" else { return .answer(answer(400)) }
            length = nil
        default:
            // Neither, or both: the creation MUST carry exactly one of them.
            return .answer(answer(400))
        }
        if let length, let maxSize, length > maxSize {
            return .answer(answer(413, [Field("Tus-Max-Size", "\(maxSize)")]))
        }
        guard let metadata = metadata(headers) else { return .answer(answer(400)) }
        let withBody = mediaType(headers) == bodyType
        var checksum: String?
        if withBody, let header = headers["upload-checksum"].first {
            guard TusChecksum(header: header) != nil else { return .answer(answer(400)) }
            checksum = header
        }
        if withBody, let length, let contentLength = FieldValue.integer(headers["content-length"].first),
            contentLength > length
        {
            return .answer(answer(400))
        }
        return .create(
            Creation(
                length: length, metadata: metadata, withBody: withBody, checksum: checksum, partial: concat != nil))
    }

    /// concatenation: the partial uploads' URLs (absolute or paths), space-separated; no length ("The Client MUST
    /// NOT include the Upload-Length header"), no body. A URL naming no upload here is 404, as an unknown upload.
    private static func final(_ list: Substring, _ headers: HTTPHeaders) -> Request {
        let urls = list.split(separator: " ")
        // Their number is bounded by the head's size (ExchangeObserver.maximumHeadSize).
        guard !urls.isEmpty, headers["upload-length"].isEmpty,
            headers["upload-defer-length"].isEmpty, headers["transfer-encoding"].isEmpty,
            (FieldValue.integer(headers["content-length"].first) ?? 0) == 0,
            let metadata = metadata(headers)
        else { return .answer(answer(400)) }
        var parts: [String] = []
        for url in urls {
            let path = url.firstRange(of: "://").map { url[$0.upperBound...].drop { $0 != "/" } } ?? url
            let id = path.dropFirst(prefix.count)
            guard path.hasPrefix(prefix), UploadStore.isValidID(id) else { return .answer(notFound()) }
            parts.append(String(id))
        }
        return .concatenate(Final(parts: parts, metadata: metadata))
    }

    /// concatenation: the final upload's length from its partial uploads as stored (`nil`: unknown or another
    /// login's, 404), each finished (400: `concatenation-unfinished` is not offered); or the refusal.
    static func join(_ parts: [(record: UploadRecord, finished: Bool)?], maxSize: Int64?) -> Joined {
        var length: Int64 = 0
        for part in parts {
            guard let part, part.record.kind == .tus else { return .refused(notFound()) }
            guard part.record.concat == .partial, part.finished, let size = part.record.length else {
                return .refused(answer(400))
            }
            let (sum, overflow) = length.addingReportingOverflow(size)
            guard !overflow, maxSize.map({ sum <= $0 }) ?? true else {
                return .refused(answer(413, maxSize.map { [Field("Tus-Max-Size", "\($0)")] } ?? []))
            }
            length = sum
        }
        return .length(length)
    }

    enum Joined: Equatable {
        case length(Int64)
        case refused(Answer)
    }

    /// Whether a PATCH may store its body in `record` (`nil`: it may, from the record's offset, with
    /// ``length(of:_:)`` as the upload's length); otherwise the answer, the upload untouched.
    static func admit(_ append: Append, contentLength: Int64?, record: UploadRecord, finished: Bool, maxSize: Int64?)
        -> Answer?
    {
        guard record.kind == .tus else { return notFound() }
        // concatenation: "The Server MUST respond with 403 Forbidden to PATCH requests against a final upload".
        if record.isFinal { return answer(403) }
        guard append.offset == record.offset else { return conflict(record) }
        if let given = append.length {
            // "Once set the length MUST NOT be changed."
            if let known = record.length, given != known { return answer(400) }
            if given < record.offset { return answer(400) }
            if let maxSize, given > maxSize { return answer(413, [Field("Tus-Max-Size", "\(maxSize)")]) }
        }
        if finished {
            // Asked again at its final offset: the answer the client may have lost.
            return contentLength == 0 || contentLength == nil
                ? appended(record, created: false, finished: true) : answer(400)
        }
        if let known = length(of: append, record), let contentLength, record.offset + contentLength > known {
            return answer(400)
        }
        return nil
    }

    /// The upload's length once `append` is admitted: as created, or as this PATCH gives it.
    static func length(of append: Append, _ record: UploadRecord) -> Int64? {
        record.length ?? append.length
    }

    // MARK: Answers

    static func options(maxSize: Int64?) -> Answer {
        var fields = [
            Field("Tus-Version", version), Field("Tus-Extension", extensions),
            Field("Tus-Checksum-Algorithm", TusChecksum.algorithms),
        ]
        if let maxSize { fields.append(Field("Tus-Max-Size", "\(maxSize)")) }
        return answer(204, fields)
    }

    /// HEAD: the offset always, finished or not (a final upload's only once joined); the length or that it is
    /// deferred; the metadata as created; a partial or final upload's `Upload-Concat`.
    static func offset(_ record: UploadRecord, finished: Bool) -> Answer {
        var fields: [Field] = record.concat == .partial ? [Field("Upload-Concat", "partial")] : []
        if case .final(let parts) = record.concat {
            fields.append(Field("Upload-Concat", "final;" + parts.map { prefix + $0 }.joined(separator: " ")))
        }
        if finished || !record.isFinal { fields.append(Field("Upload-Offset", "\(record.offset)")) }
        if let length = record.length {
            fields.append(Field("Upload-Length", "\(length)"))
        } else {
            fields.append(Field("Upload-Defer-Length", "1"))
        }
        if let metadata = record.metadata { fields.append(Field("Upload-Metadata", metadata)) }
        if !finished { fields.append(expires(record)) }
        fields.append(Field("Cache-Control", "no-store"))
        return answer(200, fields)
    }

    /// A creation (201, with its URL) or a PATCH (204) whose bytes are durable: the new offset, and
    /// until the upload is finished, when it expires.
    static func appended(_ record: UploadRecord, created: Bool, finished: Bool) -> Answer {
        var fields = [Field("Upload-Offset", "\(record.offset)")]
        if created { fields.append(Field("Location", prefix + record.id)) }
        if !finished { fields.append(expires(record)) }
        return answer(created ? 201 : 204, fields)
    }

    /// An append at another offset than the upload's: nothing stored, the client asks again.
    static func conflict(_ record: UploadRecord) -> Answer {
        answer(409, [Field("Upload-Offset", "\(record.offset)")])
    }

    /// Unknown, expired or terminated: no offset.
    static func notFound(head: Bool = false) -> Answer {
        answer(404, head ? [Field("Cache-Control", "no-store")] : [])
    }

    static func terminated() -> Answer { answer(204) }

    /// checksum: the body did not match its `Upload-Checksum`, and was not counted.
    static func checksumMismatch() -> Answer { answer(460) }

    /// Every answer, OPTIONS included, says which version it speaks.
    static func answer(_ status: Int, _ fields: [Field] = []) -> Answer {
        Answer(status: status, fields: [Field("Tus-Resumable", version)] + fields)
    }

    private static func expires(_ record: UploadRecord) -> Field {
        Field("Upload-Expires", IMFDate.format(epochSeconds: record.expires / 1000))
    }

    // MARK: Fields

    /// `Upload-Metadata` as sent (an empty field is none: some clients send one); `nil` when malformed.
    private static func metadata(_ headers: HTTPHeaders) -> String?? {
        let metadata = headers["upload-metadata"].first.flatMap { $0.trimmingSpaces.isEmpty ? nil : $0 }
        return metadata.map(TusMetadata.isValid) == false ? nil : .some(metadata)
    }

    private static func mediaType(_ headers: HTTPHeaders) -> String? {
        headers["content-type"].first?.split(separator: ";").first?.trimmingSpaces.lowercased()
    }
}
