import NIOCore

/// The way every append reaches its upload, for the draft and tus alike: claim it (a request still
/// writing is stopped and waited for first), let the protocol's machine admit or refuse it, store.
/// And the one point where a complete upload becomes a file.
extension UploadReceiver {
    /// What a claim found.
    enum Claimed {
        /// This request is now the upload's only writer: give it back with ``release(_:settled:)``, or
        /// store into it (``open(_:limit:checkpoints:settled:context:onFailure:)``); `settled` is
        /// succeeded once this request's bytes are.
        case claimed(UploadRecord, settled: EventLoopPromise<Void>)
        /// Complete and in place; kept only to answer a client whose last answer was lost.
        case finished(UploadRecord)
        case missing
        /// The shared store could not be read: the client hears 503 and comes back.
        case unavailable(UploadFailure)
    }

    /// Makes this request — its login's, see ``UploadTable`` — the writer of upload `id`. One still writing (a client
    /// that retried before
    /// the server saw its old connection die) is stopped, and its bytes settle, before the claim is
    /// asked again; `next` runs on the event loop. Only a `.claimed` upload is held by this request.
    func claim(_ id: String, context: ChannelHandlerContext, _ next: @escaping (Claimed) -> Void) {
        let (writer, promise) = writer(context)
        table.claim(id, owner: LoginGate.user(in: context), writer: writer, on: context.eventLoop) { claim in
            if case .claimed(let record) = claim { return next(.claimed(record, settled: promise)) }
            promise.succeed()
            switch claim {
            case .busy(let current):
                UploadTable.afterStopping(current, on: context.eventLoop) { self.claim(id, context: context, next) }
            case .finished(let record): next(.finished(record))
            case .missing: next(.missing)
            case .unavailable(let failure): next(.unavailable(failure))
            case .claimed: break
            }
        }
    }

    /// Gives a claimed upload back as it was: the request was refused before any byte was stored.
    func release(_ record: UploadRecord, settled: EventLoopPromise<Void>) {
        table.update(record, releasing: true)
        settled.succeed()
    }

    /// The one point where an upload — draft, tus or plain — is complete: the store puts its file in
    /// place (on the thread pool), then the table answers for it as finished until it expires (a
    /// plain upload, which no client can ask about again, is forgotten). `then` runs on the event loop.
    /// Completion hooks belong here.
    func finish(
        _ record: UploadRecord, replacing: Bool, context: ChannelHandlerContext,
        _ then: @escaping (Result<Void, UploadFailure>) -> Void
    ) {
        let store = store
        threadPool.runIfActive(eventLoop: context.eventLoop) { try store.finish(record, replacing: replacing) }
            .assumeIsolated().whenComplete { result in
                switch result {
                case .success:
                    if record.kind == .plain {
                        self.table.remove(record.id)
                    } else {
                        self.table.finish(record)
                    }
                    then(.success(()))
                case .failure(let error):
                    then(.failure(UploadFailure(error)))
                }
            }
    }
}
