import NIOHTTP1

/// The server side of draft-ietf-httpbis-resumable-upload, interop versions 3, 5, 6, 8 and 9: what a
/// request head asks for, and every answer. Pure (no I/O, no clock): ``UploadHandler`` runs it over
/// the upload store, and the unit tests drive it with heads alone.
///
/// Interop 3 names its completion field `Upload-Incomplete` (the opposite boolean); 5 and later say
/// `Upload-Complete`; from 6 a PATCH carries `Content-Type: application/partial-upload` and
/// `Upload-Length` may announce the length; 8 adds `Upload-Limit` to HEAD and progress answers.
///
/// Interop 9 (draft -12; each rule from the pull request that made it, httpwg/http-extensions): every
/// answer to a creation or an append says whose it is by `Upload-Complete`, `?1` only for the completed
/// upload's own (PR #3404); an append to a completed upload gets that final answer again, not a refusal
/// (PR #3405); the offset may be asked with GET as well as HEAD (PR #3467).
enum DraftMachine {
    static let versions = [3, 5, 6, 8, 9]
    static let newest = 9
    /// Upload URLs are this prefix and the upload's id, sent as a path only: a client resolves it
    /// against the URL it used, so a reverse proxy or a host name keeps working.
    static let prefix = "/resumable_upload/"

    typealias Field = UploadAnswer.Field
    typealias Answer = UploadAnswer

    enum Request: Equatable {
        /// No draft fields: a plain upload, or not an upload at all.
        case notDraft
        /// Answered from the head alone (a malformed or unsupported request).
        case answer(Answer)
        case options(version: Int)
        case create(version: Int, complete: Bool, length: Int64?)
        case offset(version: Int, id: String)
        case append(version: Int, id: String, offset: Int64, complete: Bool, length: Int64?)
        case cancel(version: Int, id: String)
    }

    // MARK: Requests

    /// What `method target` with `headers` asks for.
    static func classify(method: HTTPMethod, target: String, headers: HTTPHeaders) -> Request {
        let path = target.prefix { $0 != "?" && $0 != "#" }
        let underPrefix = path.hasPrefix(prefix)
        guard let raw = headers["upload-draft-interop-version"].first else {
            return underPrefix ? .answer(Answer(status: 400, fields: [Field(interopName, "\(newest)")])) : .notDraft
        }
        guard let version = FieldValue.integer(raw).map(Int.init), versions.contains(version) else {
            // Names the version this server speaks best; a client that speaks it retries with it.
            return .answer(Answer(status: 400, fields: [Field(interopName, "\(newest)")]))
        }
        let complete = completion(version, headers)
        let offset = FieldValue.integer(headers["upload-offset"].first)
        let length = FieldValue.integer(headers["upload-length"].first)
        let contentLength = FieldValue.integer(headers["content-length"].first)
        let bad = refusal(version: version, status: 400)

        if method == .OPTIONS {
            return complete == nil && offset == nil && length == nil ? .options(version: version) : .answer(bad)
        }
        guard underPrefix else {
            guard let complete else { return .notDraft }
            guard method == .POST || method == .PUT else {
                return .answer(
                    Answer(status: 405, fields: [Field(interopName, "\(version)"), Field("Allow", "POST, PUT")]))
            }
            if let offset, offset != 0 { return .answer(bad) }
            var total = length
            if complete, let contentLength {
                if let length, length != contentLength { return .answer(bad) }
                total = contentLength
            }
            return .create(version: version, complete: complete, length: total)
        }
        let id = String(path.dropFirst(prefix.count))
        switch method {
        case .HEAD, .DELETE,
            .GET where version >= 9:
            guard complete == nil, offset == nil, length == nil else { return .answer(bad) }
            return method == .DELETE ? .cancel(version: version, id: id) : .offset(version: version, id: id)
        case .PATCH:
            guard let offset else { return .answer(bad) }
            if version >= 6 {
                let type = headers["content-type"].first?.split(separator: ";").first?.trimmingSpaces.lowercased()
                guard type == "application/partial-upload" else {
                    return .answer(refusal(version: version, status: 415))
                }
            }
            // A PATCH without the field completes the upload (interop 3 and 5 clients may leave it out).
            let completes = complete ?? true
            var total = length
            if completes, let contentLength {
                if let length, length != offset + contentLength { return .answer(bad) }
                total = offset + contentLength
            }
            return .append(version: version, id: id, offset: offset, complete: completes, length: total)
        default:
            let allowed = version >= 9 ? "GET, HEAD, PATCH, DELETE" : "HEAD, PATCH, DELETE"
            return .answer(Answer(status: 405, fields: [Field(interopName, "\(version)"), Field("Allow", allowed)]))
        }
    }

    /// Whether an append may start: the offset must be the upload's, a length must agree with the one
    /// known. A finished upload answers again as it did (its client may have lost that answer).
    static func admit(
        version: Int, offset: Int64, length: Int64?, contentLength: Int64?, record: UploadRecord, finished: Bool
    ) -> Answer? {
        if finished {
            // Interop 9 has no refusal of an append to a completed upload: the final answer, again.
            if version >= 9 || (offset == record.offset && (contentLength == 0 || contentLength == nil)) {
                return done(version: version, record: record, created: false)
            }
            return conflict(version: version, record: record, finished: true)
        }
        guard offset == record.offset else { return conflict(version: version, record: record, finished: false) }
        if let length, let known = record.length, length != known { return refusal(version: version, status: 400) }
        if let known = length ?? record.length, let contentLength, offset + contentLength > known {
            return refusal(version: version, status: 400)
        }
        return nil
    }

    // MARK: Answers

    /// The `104` sent as soon as a creation is durable: its upload URL.
    static func informational(version: Int, id: String, maxSize: Int64?) -> Answer {
        var fields = [Field(interopName, "\(version)"), Field("Location", prefix + id)]
        if version >= 6, let limit = limitValue(maxSize) { fields.append(Field("Upload-Limit", limit)) }
        return Answer(status: 104, fields: fields)
    }

    /// A creation or append that ended with the upload still incomplete.
    static func progress(version: Int, record: UploadRecord, created: Bool, maxSize: Int64?) -> Answer {
        var fields = [Field(interopName, "\(version)")]
        if created { fields.append(Field("Location", prefix + record.id)) }
        fields.append(flag(version, complete: false))
        fields.append(Field("Upload-Offset", "\(record.offset)"))
        if version >= 8, let limit = limitValue(maxSize) { fields.append(Field("Upload-Limit", limit)) }
        return Answer(status: created ? 201 : 204, fields: fields)
    }

    /// The upload is complete and in place.
    static func done(version: Int, record: UploadRecord, created: Bool) -> Answer {
        var fields = [Field(interopName, "\(version)")]
        if created { fields.append(Field("Location", prefix + record.id)) }
        fields.append(flag(version, complete: true))
        fields.append(Field("Upload-Offset", "\(record.offset)"))
        return Answer(status: 201, fields: fields)
    }

    /// The answer to HEAD: the durable offset.
    static func offset(version: Int, record: UploadRecord, finished: Bool, maxSize: Int64?) -> Answer {
        var fields = [
            Field(interopName, "\(version)"), flag(version, complete: finished),
            Field("Upload-Offset", "\(record.offset)"), Field("Cache-Control", "no-store"),
        ]
        if version >= 6, let length = record.length { fields.append(Field("Upload-Length", "\(length)")) }
        if version >= 8, let limit = limitValue(maxSize) { fields.append(Field("Upload-Limit", limit)) }
        return Answer(status: 204, fields: fields)
    }

    /// An append at another offset than the upload's: the client asks again and continues from there.
    static func conflict(version: Int, record: UploadRecord, finished: Bool) -> Answer {
        Answer(
            status: 409,
            fields: [
                Field(interopName, "\(version)"), flag(version, complete: finished),
                Field("Upload-Offset", "\(record.offset)"),
            ])
    }

    /// An answer of the upload protocol itself (a refusal, a failure of the store) to a creation or an
    /// append: from interop 9 it says so with `Upload-Complete: ?0`, so that the client never mistakes it
    /// for the target resource's answer.
    static func refusal(version: Int, status: Int, fields: [Field] = []) -> Answer {
        var all = [Field(interopName, "\(version)")]
        if version >= 9 { all.append(flag(version, complete: false)) }
        return Answer(status: status, fields: all + fields)
    }

    static func notFound(version: Int) -> Answer {
        Answer(status: 404, fields: [Field(interopName, "\(version)")])
    }

    static func cancelled(version: Int) -> Answer {
        Answer(status: 204, fields: [Field(interopName, "\(version)")])
    }

    /// Discovery: the limits (`min-size=0` when there are none, as the draft asks).
    static func options(version: Int, maxSize: Int64?) -> Answer {
        let limit = maxSize.map { "min-size=0, max-size=\($0)" } ?? "min-size=0"
        return Answer(status: 200, fields: [Field(interopName, "\(version)"), Field("Upload-Limit", limit)])
    }

    // MARK: Fields

    static let interopName = "Upload-Draft-Interop-Version"

    /// The completion field of `version`: `Upload-Incomplete` for 3, `Upload-Complete` after.
    static func flag(_ version: Int, complete: Bool) -> Field {
        version == 3
            ? Field("Upload-Incomplete", complete ? "?0" : "?1")
            : Field("Upload-Complete", complete ? "?1" : "?0")
    }

    private static func completion(_ version: Int, _ headers: HTTPHeaders) -> Bool? {
        if version == 3 { return boolean(headers["upload-incomplete"].first).map { !$0 } }
        return boolean(headers["upload-complete"].first)
    }

    private static func limitValue(_ maxSize: Int64?) -> String? {
        maxSize.map { "max-size=\($0)" }
    }

    /// A structured-field boolean (`?1`, `?0`); anything else counts as absent.
    private static func boolean(_ value: String?) -> Bool? {
        switch value?.trimmingSpaces {
        case "?1": true
        case "?0": false
        default: nil
        }
    }
}
