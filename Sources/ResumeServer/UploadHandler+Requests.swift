import NIOCore
import NIOHTTP1

/// The steps of every upload, whatever its protocol: target and admission, create or claim, receive the
/// body, settle it, finish. The decisions stay in the protocols' machines; the order of the steps is here.
extension UploadHandler {
    func start(context: ChannelHandlerContext, head: HTTPRequestHead, _ request: UploadRequest) {
        switch request {
        case .pass:
            break
        case .answer(let answer):
            exchange = Exchange(head: head, dialect: .plain)
            self.answer(context: context, answer)
        case .create(let dialect, let creation):
            exchange = Exchange(
                head: head, dialect: dialect, created: true, completes: creation.completes,
                checksum: creation.checksum.flatMap(TusChecksum.init(header:)))
            create(context: context, head: head, creation)
        case .concatenate(let final):
            exchange = Exchange(head: head, dialect: .tus, created: true)
            concatenate(context: context, head: head, final)
        case .offset(let dialect, let id):
            exchange = Exchange(head: head, dialect: dialect)
            whenIdle(context: context, id: id) { entry in
                self.answer(
                    context: context,
                    entry.map { dialect.offset($0, maxSize: self.maxSize) } ?? dialect.notFound(head: true))
            }
        case .append(let dialect, let append):
            exchange = Exchange(
                head: head, dialect: dialect, completes: append.completes,
                checksum: append.checksum.flatMap(TusChecksum.init(header:)))
            self.append(context: context, head: head, append)
        case .cancel(let dialect, let id):
            exchange = Exchange(head: head, dialect: dialect)
            whenIdle(context: context, id: id) { entry in
                guard let entry else { return self.answer(context: context, dialect.notFound(head: false)) }
                let target = "/" + entry.record.target.joined(separator: "/")
                self.settings.log?(
                    entry.finished
                        ? "\(dialect.logName) \(target): its URL retired, the file stays"
                        : "\(dialect.logName) \(target) cancelled")
                self.receiver.drop(id)
                self.answer(context: context, dialect.cancelled())
            }
        }
    }

    /// The upload `id` of this request's protocol and login, once no request is writing to it (one that
    /// is, is stopped first); when the store cannot be read, the request is answered here (503).
    private func whenIdle(context: ChannelHandlerContext, id: String, _ next: @escaping (UploadTable.Entry?) -> Void) {
        guard let kind = exchange?.dialect.kind else { return }
        settings.table.whenIdle(id, owner: LoginGate.user(in: context), on: context.eventLoop) { found in
            switch found {
            case .success(let entry): next(entry?.record.kind == kind ? entry : nil)
            case .failure(let failure): self.fail(context: context, failure)
            }
        }
    }

    /// Where a creation puts its file, once admitted (`nil`: refused, answered here). A tus creation may
    /// name a folder and its file by metadata; the others name the file. A tus partial upload is no file.
    private func admitted(context: ChannelHandlerContext, head: HTTPRequestHead, partial: String?) -> [String]? {
        guard let dialect = exchange?.dialect else { return nil }
        let components: [String]
        do {
            components =
                try partial.map(UploadRecord.partialTarget)
                ?? (dialect == .tus
                    ? try TusTarget.components(head, root: settings.root) : try SafePath.components(ofTarget: head.uri))
        } catch {
            answer(context: context, dialect.answer(error as? PathRefusal == .malformed ? 400 : 403))
            return nil
        }
        if let refusal = settings.admission.check(head, components: partial == nil ? components : nil) {
            settings.log?("\(dialect.logName) \(head.uri) refused: \(refusal.reason)")
            answer(context: context, dialect.answer(Int(refusal.status.code), refusal.headers))
            return nil
        }
        return components
    }

    private func create(context: ChannelHandlerContext, head: HTTPRequestHead, _ creation: UploadRequest.Creation) {
        guard let dialect = exchange?.dialect else { return }
        let id = settings.store.newID()
        guard let components = admitted(context: context, head: head, partial: creation.partial ? id : nil) else {
            return
        }
        let slots = settings.admission.slots
        if let slots, !slots.acquire() {
            settings.log?("\(dialect.logName) \(head.uri) refused: \(slots.limit) uploads in progress (--max-uploads)")
            return answer(context: context, dialect.failed(UploadFailure(status: 503, "no upload slot free")))
        }
        var interop: Int?
        if case .draft(let version) = dialect { interop = version }
        let record = UploadRecord(
            id: id, kind: dialect.kind, interop: interop, target: components, length: creation.length,
            metadata: creation.metadata, user: LoginGate.user(in: context),
            expires: WallClock.millis() + settings.expiry,
            concat: creation.partial ? .partial : nil)
        continueIfAsked(context: context, head: head)
        receiver.create(record, slots: slots, context: context) { result in
            switch result {
            case .success(let promise):
                if let interop, head.version != .http1_0 {
                    self.interim(
                        context: context,
                        DraftMachine.informational(version: interop, id: record.id, maxSize: self.maxSize))
                }
                self.receive(context: context, record: record, settled: promise)
            case .failure(let failure):
                self.fail(context: context, failure)
            }
        }
    }

    /// tus concatenation: a final upload joins its partial uploads, this login's and finished, in order into
    /// its file in the store (on the thread pool), then answers as a creation whose every byte is there.
    private func concatenate(context: ChannelHandlerContext, head: HTTPRequestHead, _ final: TusMachine.Final) {
        let id = settings.store.newID()
        guard let components = admitted(context: context, head: head, partial: nil) else { return }
        let owner = LoginGate.user(in: context)
        settings.table.entries(final.parts[...], owner: owner, on: context.eventLoop) { found in
            guard case .success(let entries) = found else {
                if case .failure(let failure) = found { self.fail(context: context, failure) }
                return
            }
            let length: Int64
            switch TusMachine.join(entries.map { $0.map { ($0.record, $0.finished) } }, maxSize: self.maxSize) {
            case .refused(let refusal): return self.answer(context: context, refusal)
            case .length(let sum): length = sum
            }
            let record = UploadRecord(
                id: id, kind: .tus, target: components, length: length, metadata: final.metadata, user: owner,
                expires: WallClock.millis() + self.settings.expiry, concat: .final(parts: final.parts))
            let (store, replacing) = (self.settings.store, self.settings.admission.overwrite)
            let parts = entries.compactMap { $0?.record }
            self.settings.threadPool.runIfActive(eventLoop: context.eventLoop) {
                try store.concatenate(record, parts: parts, replacing: replacing)
            }.assumeIsolated().whenComplete { result in
                switch result {
                case .success(let done):
                    self.settings.table.insert(done, finished: true)
                    self.answer(context: context, TusMachine.appended(done, created: true, finished: true))
                case .failure(let error):
                    self.fail(context: context, UploadFailure(error))
                }
            }
        }
    }

    private func append(context: ChannelHandlerContext, head: HTTPRequestHead, _ append: UploadRequest.Append) {
        guard let dialect = exchange?.dialect else { return }
        if dialect != .tus, let refusal = settings.admission.check(head, components: nil) {
            settings.log?("\(dialect.logName) \(head.uri) refused: \(refusal.reason)")
            return answer(context: context, dialect.answer(Int(refusal.status.code), refusal.headers))
        }
        continueIfAsked(context: context, head: head)
        let contentLength = FieldValue.integer(head.headers["content-length"].first)
        receiver.claim(append.id, context: context) { claimed, settled in
            switch claimed {
            case .missing:
                self.answer(context: context, dialect.notFound(head: false))
            case .unavailable(let failure):
                self.fail(context: context, failure)
            case .finished(let record):
                self.answer(
                    context: context,
                    dialect.admit(
                        append, contentLength: contentLength, record: record, finished: true, maxSize: self.maxSize)
                        ?? dialect.done(record, created: false))
            case .claimed(var record):
                if let refusal = dialect.admit(
                    append, contentLength: contentLength, record: record, finished: false, maxSize: self.maxSize)
                {
                    self.receiver.release(record, settled: settled)
                    return self.answer(context: context, refusal)
                }
                record.length = record.length ?? append.length
                self.receive(context: context, record: record, settled: settled)
            case .busy:
                break
            }
        }
    }

    // MARK: Bodies

    /// Starts storing the body into `record`'s data, from its offset.
    private func receive(context: ChannelHandlerContext, record: UploadRecord, settled: EventLoopPromise<Void>) {
        guard var current = exchange, !current.answered else {
            receiver.release(record, settled: settled)
            return
        }
        current.lengthKnown = record.length != nil
        exchange = current
        let opened = receiver.open(
            record, limit: record.length ?? maxSize.map { max($0, record.offset) },
            checkpoints: current.dialect.keepsPartialBytes && current.checksum == nil,
            settled: settled, context: context
        ) { [weak self, weak context] failure in if let context { self?.failMidBody(context: context, failure) } }
        guard opened else {
            refuseMidBody(context: context, current.dialect.tooLong(lengthKnown: current.lengthKnown, maxSize: maxSize))
            return
        }
        if current.ended {
            endBody(context: context)
        } else if receiver.inactive {
            abandon()
        }
        receiver.resume(context: context)
    }

    /// The request's bytes are durable: finish the upload, or say how far it got.
    func settled(context: ChannelHandlerContext, _ ending: UploadAppender.Ending, checksumMatched: Bool) {
        guard let current = exchange, !current.answered else { return }
        let dialect = current.dialect
        switch ending {
        case .failed(let failure, let record):
            if !dialect.keepsPartialBytes { receiver.drop(record.id) }
            fail(context: context, failure)
        case .settled(var record):
            guard checksumMatched else { return answer(context: context, TusMachine.checksumMismatch()) }
            if current.completes == true && record.length == nil { record.length = record.offset }
            guard current.completes != false, record.isComplete else {
                if !dialect.keepsPartialBytes { receiver.drop(record.id) }
                return answer(context: context, dialect.progress(record, created: current.created, maxSize: maxSize))
            }
            receiver.finish(record, replacing: settings.admission.overwrite, context: context) { result in
                switch result {
                case .success:
                    self.answer(context: context, dialect.done(record, created: current.created))
                case .failure(let failure):
                    if !dialect.keepsPartialBytes { self.receiver.drop(record.id) }
                    self.fail(context: context, failure)
                }
            }
        }
    }
}
