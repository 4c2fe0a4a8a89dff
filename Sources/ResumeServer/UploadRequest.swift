import NIOHTTP1

/// What an upload request asks of the store, whichever protocol it speaks: ``DraftMachine`` and
/// ``TusMachine`` read their own fields, and their requests become these few, which ``UploadHandler``
/// carries out in one way for all. Pure.
enum UploadRequest: Equatable {
    /// The protocol a request speaks; it picks the answers (``UploadDialect``), never the steps.
    enum Dialect: Equatable {
        /// A `PUT` or `POST` of a whole file.
        case plain
        /// draft-ietf-httpbis-resumable-upload, at this interop version.
        case draft(version: Int)
        /// tus 1.0.0.
        case tus
    }

    struct Creation: Equatable {
        /// `nil`: not known yet (a draft upload without it, tus `Upload-Defer-Length`).
        var length: Int64?
        /// Whether the request carries the upload's last byte; `nil` when the length alone says (tus).
        var completes: Bool?
        var metadata: String?
        var checksum: String?
        /// tus concatenation: a partial upload, material for final ones (``UploadRecord/Concat``).
        var partial = false
    }

    struct Append: Equatable {
        var id: String
        var offset: Int64
        /// The length the request gives the upload, if any.
        var length: Int64?
        var completes: Bool?
        var checksum: String?
    }

    /// Not an upload request: on to the file handler.
    case pass
    /// Answered from the head alone.
    case answer(UploadAnswer)
    case create(Dialect, Creation)
    /// tus concatenation: a final upload joining partial ones.
    case concatenate(TusMachine.Final)
    case offset(Dialect, id: String)
    case append(Dialect, Append)
    case cancel(Dialect, id: String)

    /// What the request `head` asks for (its method after ``MethodOverride``).
    static func classify(_ head: HTTPRequestHead, maxSize: Int64?) -> UploadRequest {
        let method = head.method
        switch TusMachine.classify(method: method, target: head.uri, headers: head.headers, maxSize: maxSize) {
        case .notTus: break
        case .answer(let answer): return .answer(answer)
        case .options: return .answer(TusMachine.options(maxSize: maxSize))
        case .create(let creation):
            return .create(
                .tus,
                Creation(
                    length: creation.length, metadata: creation.metadata,
                    checksum: creation.withBody ? creation.checksum : nil, partial: creation.partial))
        case .concatenate(let final): return .concatenate(final)
        case .offset(let id): return .offset(.tus, id: id)
        case .append(let append): return .append(.tus, append)
        case .terminate(let id): return .cancel(.tus, id: id)
        }
        // Downloads, and methods no upload uses outside the draft's URLs, are the file handler's.
        let underDraft = head.uri.utf8.starts(with: DraftMachine.prefix.utf8)
        guard underDraft || method == .PUT || method == .POST || method == .OPTIONS else { return .pass }
        switch DraftMachine.classify(method: method, target: head.uri, headers: head.headers) {
        case .notDraft:
            guard method == .PUT || method == .POST else { return .pass }
            return .create(
                .plain, Creation(length: FieldValue.integer(head.headers["content-length"].first), completes: true))
        case .answer(let answer): return .answer(answer)
        case .options(let version):
            var options = DraftMachine.options(version: version, maxSize: maxSize)
            options.fields.append(UploadAnswer.Field("Allow", StaticFileHandler.allowed))
            return .answer(options)
        case .create(let version, let complete, let length):
            return .create(.draft(version: version), Creation(length: length, completes: complete))
        case .offset(let version, let id): return .offset(.draft(version: version), id: id)
        case .append(let version, let id, let offset, let complete, let length):
            return .append(
                .draft(version: version), Append(id: id, offset: offset, length: length, completes: complete))
        case .cancel(let version, let id): return .cancel(.draft(version: version), id: id)
        }
    }
}
