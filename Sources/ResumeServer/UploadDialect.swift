/// Each step of ``UploadHandler`` answers in the words of the request's protocol: here a step's outcome
/// becomes ``DraftMachine``'s or ``TusMachine``'s answer (a plain upload has only a status).
extension UploadRequest.Dialect {
    var kind: UploadRecord.Kind {
        switch self {
        case .plain: .plain
        case .draft: .ietf
        case .tus: .tus
        }
    }

    /// How the server's log names this protocol's uploads.
    var logName: String { self == .tus ? "tus upload" : "upload" }

    /// A plain upload's bytes are worthless unless it completes; a resumable one keeps what is stored.
    var keepsPartialBytes: Bool { self != .plain }

    /// A bare status, or the refusal of a check that needs no storage.
    func answer(_ status: Int, _ fields: [(String, String)] = []) -> UploadAnswer {
        let fields = fields.map { UploadAnswer.Field($0.0, $0.1) }
        switch self {
        case .plain: return UploadAnswer(status: status, fields: fields)
        case .draft(let version): return DraftMachine.refusal(version: version, status: status, fields: fields)
        case .tus: return TusMachine.answer(status, fields)
        }
    }

    /// The store failed: 503 asks the client to come back; the draft has no 423 (another instance appends
    /// to the upload), so its client hears a conflict and asks for the offset again.
    func failed(_ failure: UploadFailure) -> UploadAnswer {
        let status = self == .tus || failure.status != 423 ? failure.status : 409
        return answer(status, status == 503 ? [("Retry-After", "\(UploadAdmission.retryAfterBusy)")] : [])
    }

    /// The body went past the upload's length (400) or, with no length known, past `--max-upload-size` (413).
    func tooLong(lengthKnown: Bool, maxSize: Int64?) -> UploadAnswer {
        guard !lengthKnown else { return answer(400) }
        guard case .draft = self, let maxSize else { return answer(413) }
        return answer(413, [("Upload-Limit", "max-size=\(maxSize)")])
    }

    func notFound(head: Bool) -> UploadAnswer {
        switch self {
        case .plain: UploadAnswer(status: 404, fields: [])
        case .draft(let version): DraftMachine.notFound(version: version)
        case .tus: TusMachine.notFound(head: head)
        }
    }

    func offset(_ entry: UploadTable.Entry, maxSize: Int64?) -> UploadAnswer {
        switch self {
        case .plain: notFound(head: true)
        case .draft(let version):
            DraftMachine.offset(version: version, record: entry.record, finished: entry.finished, maxSize: maxSize)
        case .tus: TusMachine.offset(entry.record, finished: entry.finished)
        }
    }

    func cancelled() -> UploadAnswer {
        switch self {
        case .plain: answer(204)
        case .draft(let version): DraftMachine.cancelled(version: version)
        case .tus: TusMachine.terminated()
        }
    }

    /// Whether `append` may store its body in `record` (`nil`: it may); otherwise the answer, the upload
    /// untouched. A finished upload answers again as it did: its client may have lost that answer.
    func admit(
        _ append: UploadRequest.Append, contentLength: Int64?, record: UploadRecord, finished: Bool, maxSize: Int64?
    ) -> UploadAnswer? {
        guard record.kind == kind else { return notFound(head: false) }
        switch self {
        case .plain:
            return notFound(head: false)
        case .draft(let version):
            return DraftMachine.admit(
                version: version, offset: append.offset, length: append.length, contentLength: contentLength,
                record: record, finished: finished)
        case .tus:
            return TusMachine.admit(
                append, contentLength: contentLength, record: record, finished: finished, maxSize: maxSize)
        }
    }

    /// The request's bytes are durable and the upload is still incomplete.
    func progress(_ record: UploadRecord, created: Bool, maxSize: Int64?) -> UploadAnswer {
        switch self {
        case .plain: answer(400)
        case .draft(let version):
            DraftMachine.progress(version: version, record: record, created: created, maxSize: maxSize)
        case .tus: TusMachine.appended(record, created: created, finished: false)
        }
    }

    /// The upload is complete and in place.
    func done(_ record: UploadRecord, created: Bool) -> UploadAnswer {
        switch self {
        case .plain: answer(201)
        case .draft(let version): DraftMachine.done(version: version, record: record, created: created)
        case .tus: TusMachine.appended(record, created: created, finished: true)
        }
    }
}
