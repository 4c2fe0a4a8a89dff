import NIOCore
import NIOHTTP1

/// What each tus request does to the store, once ``TusMachine`` has said what it asks for: the
/// decisions stay in the machine, the order of the steps (target, admission, claim, store, finish) here.
extension TusHandler {
    func handle(context: ChannelHandlerContext, head: HTTPRequestHead, _ request: TusMachine.Request) {
        switch request {
        case .notTus:
            break
        case .answer(let answer):
            self.answer(context: context, head: head, answer)
        case .options:
            answer(context: context, head: head, TusMachine.options(maxSize: settings.admission.maxUploadSize))
        case .create(let creation):
            create(context: context, head: head, creation)
        case .offset(let id):
            whenIdle(context: context, head: head, id: id) { entry in
                guard let entry else {
                    return self.answer(context: context, head: head, TusMachine.notFound(head: true))
                }
                self.answer(context: context, head: head, TusMachine.offset(entry.record, finished: entry.finished))
            }
        case .append(let append):
            self.append(context: context, head: head, append)
        case .terminate(let id):
            whenIdle(context: context, head: head, id: id) { entry in
                guard let entry else { return self.answer(context: context, head: head, TusMachine.notFound()) }
                let target = "/" + entry.record.target.joined(separator: "/")
                self.settings.log?(
                    entry.finished
                        ? "tus upload \(target): its URL retired, the file stays" : "tus upload \(target) terminated")
                self.receiver.drop(id)
                self.answer(context: context, head: head, TusMachine.terminated())
            }
        }
    }

    /// The tus upload `id`, once no request is writing to it (one that is, is stopped first); when the
    /// store cannot be read, the request is answered here (503).
    private func whenIdle(
        context: ChannelHandlerContext, head: HTTPRequestHead, id: String,
        _ next: @escaping (UploadTable.Entry?) -> Void
    ) {
        settings.table.whenIdle(id, owner: LoginGate.user(in: context), on: context.eventLoop) { found in
            switch found {
            case .success(let entry): next(entry?.record.kind == .tus ? entry : nil)
            case .failure(let failure): self.unavailable(context: context, head: head, failure)
            }
        }
    }

    private func create(context: ChannelHandlerContext, head: HTTPRequestHead, _ creation: TusMachine.Creation) {
        let components: [String]
        do {
            components = try TusTarget.components(head, root: settings.root)
        } catch {
            answer(context: context, head: head, TusMachine.answer(Int(error.status.code)))
            return
        }
        if let refusal = settings.admission.check(head, components: components) {
            settings.log?("tus upload \(head.uri) refused: \(refusal.reason)")
            answer(
                context: context, head: head,
                TusMachine.answer(Int(refusal.status.code), refusal.headers.map { .init($0.0, $0.1) }))
            return
        }
        if let slots = settings.admission.slots, !slots.acquire() {
            answer(
                context: context, head: head, TusMachine.failed(status: 503, retryAfter: UploadAdmission.retryAfterBusy)
            )
            return
        }
        let record = UploadRecord(
            id: UploadStore.newID(), kind: .tus, target: components, length: creation.length,
            metadata: creation.metadata, user: LoginGate.user(in: context),
            expires: WallClock.millis() + settings.expiry)
        state = .appending(Append(checksum: creation.checksum.flatMap(TusChecksum.init(header:)), created: true))
        continueIfAsked(context: context, head: head)
        receiver.create(record, slots: settings.admission.slots, context: context) { result in
            switch result {
            case .success(let promise):
                self.receive(context: context, record: record, settled: promise)
            case .failure(let failure):
                self.settings.log?("tus upload \(head.uri) failed: \(failure.reason)")
                guard case .appending(var append) = self.state else { return }
                self.fail(context: context, &append, status: failure.status)
            }
        }
    }

    private func append(context: ChannelHandlerContext, head: HTTPRequestHead, _ append: TusMachine.Append) {
        state = .appending(Append(checksum: append.checksum.flatMap(TusChecksum.init(header:)), created: false))
        continueIfAsked(context: context, head: head)
        let contentLength = UploadAdmission.integer(head.headers["content-length"].first)
        let maxSize = settings.admission.maxUploadSize
        receiver.claim(append.id, context: context) { claimed in
            switch claimed {
            case .missing:
                self.refuse(context: context, TusMachine.notFound())
            case .unavailable(let failure):
                self.unavailable(context: context, head: nil, failure)
            case .finished(let record):
                let again =
                    TusMachine.admit(
                        append, contentLength: contentLength, record: record, finished: true, maxSize: maxSize)
                    ?? TusMachine.conflict(record)
                if again.status == 204 {
                    self.answer(context: context, again, close: false)
                } else {
                    self.refuse(context: context, again)
                }
            case .claimed(var record, let settled):
                if let refusal = TusMachine.admit(
                    append, contentLength: contentLength, record: record, finished: false, maxSize: maxSize)
                {
                    self.receiver.release(record, settled: settled)
                    self.refuse(context: context, refusal)
                    return
                }
                record.length = TusMachine.length(of: append, record)
                self.receive(context: context, record: record, settled: settled)
            }
        }
    }

    // MARK: Storing

    private func receive(context: ChannelHandlerContext, record: UploadRecord, settled: EventLoopPromise<Void>) {
        guard case .appending(var append) = state else {
            receiver.release(record, settled: settled)
            return
        }
        let limit = record.length ?? settings.admission.maxUploadSize.map { max($0, record.offset) }
        let opened = receiver.open(
            record, limit: limit, checkpoints: append.checksum == nil, settled: settled, context: context
        ) {
            [weak self, weak context] failure in
            guard let self, let context, case .appending(var append) = self.state, !append.failed, !append.ended else {
                return
            }
            self.settings.log?("tus upload failed: \(failure.reason)")
            self.fail(context: context, &append, status: failure.status)
        }
        guard opened else {
            // Past the length it was given, or past --max-upload-size while the length is deferred.
            fail(context: context, &append, status: record.length == nil ? 413 : 400)
            return
        }
        if append.ended {
            let keep = append.checksum?.matches() ?? true
            receiver.sink?.end(keep: keep) { self.settled(context: context, $0, checksumMatched: keep) }
        } else if receiver.inactive {
            abandon()
        }
        receiver.resume(context: context)
    }

    func settled(context: ChannelHandlerContext, _ ending: UploadAppender.Ending, checksumMatched: Bool) {
        guard case .appending(let append) = state, !append.failed else { return }
        switch ending {
        case .failed(let failure, _):
            settings.log?("tus upload failed: \(failure.reason)")
            answer(
                context: context, TusMachine.failed(status: failure.status, retryAfter: UploadAdmission.retryAfterBusy),
                close: false)
        case .settled(let record):
            guard checksumMatched else { return answer(context: context, TusMachine.checksumMismatch(), close: false) }
            guard record.isComplete else {
                return answer(
                    context: context, TusMachine.appended(record, created: append.created, finished: false),
                    close: false)
            }
            receiver.finish(record, replacing: settings.admission.overwrite, context: context) { result in
                switch result {
                case .success:
                    self.answer(
                        context: context, TusMachine.appended(record, created: append.created, finished: true),
                        close: false)
                case .failure(let failure):
                    self.settings.log?("tus upload /\(record.target.joined(separator: "/")) failed: \(failure.reason)")
                    self.answer(context: context, TusMachine.answer(failure.status), close: false)
                }
            }
        }
    }
}
