/// `producer | resumectl upload - URL` to a server without resumable uploads (`--protocol plain`, or
/// `auto` when the server's OPTIONS answer names neither tus nor the draft): stdin is the body of one
/// POST, sent chunked as `curl -T -` sends it. Nothing is spooled and no token is written — nothing
/// could continue the upload — and the user is told so once.
///
/// A fault before the connection is made (no resolve, refused) is retried under the transfer's rules,
/// since no byte of stdin was read yet; any later fault ends the upload (exit 1): the bytes read from
/// the pipe are gone, and a plain server holds no part of an upload to add to.
struct PlainStreamUpload {
    let url: String
    let headers: HeaderFields
    let input: Int32
    let transport: any HTTPTransport
    let options: TransferOptions
    let cancellation: Cancellation
    let emit: EventHandler

    func run() throws(TransferError) -> UploadResult {
        emit(.note("\(url) takes no resumable uploads: the stream goes in one request, and a cut cannot be resumed"))
        emit(.started(kind: .upload, url: url, path: "-", offset: 0, total: nil))
        let session = transport.makeSession()
        return try Retrier.run(
            options, cancellation: cancellation, events: emit, fresh: { true },
            stopped: "stopped before the upload began"
        ) { () throws(TransferError) in
            let watcher = Watcher(emit: emit)
            let result = session.perform(
                TransferRequest(method: "POST", url: url, headers: headers, body: .stream(input)),
                settings: options.transport,
                cancellation: cancellation, delegate: watcher)
            if result.outcome == .cancelled {
                throw TransferError(
                    .stopped(cancellation.reason ?? .interrupt),
                    "stopped; a stream sent in one request cannot be resumed")
            }
            var fault = Fault.of(result.outcome, stallSeconds: options.transport.stallTimeout)
            if fault == nil {
                guard let head = watcher.head else { throw TransferError(.failed, "the server sent no answer") }
                if head.isSuccess {
                    emit(.completed(location: url, bytes: watcher.sent, sha256: nil))
                    return .done(UploadResult(url: url, bytes: watcher.sent, sha256: nil))
                }
                fault = .answered(
                    head.status, retryAfter: head.headers["Retry-After"],
                    "the server answered \(head.status) \(head.reason)")
            }
            guard let fault, fault.isNetworkDown else {
                throw TransferError(
                    .failed,
                    "\(fault?.message ?? ""); the stream went to a server without resumable uploads, so it cannot be "
                        + "resumed",
                    status: fault?.status)
            }
            return .failed(fault)
        }
    }

    /// Keeps the final head and the bytes sent, and reports progress.
    private final class Watcher: ExchangeDelegate {
        var head: ResponseHead?
        var sent: Int64 = 0
        private var pacer = ProgressPacer()
        private let emit: EventHandler

        init(emit: @escaping EventHandler) { self.emit = emit }

        func exchange(head: ResponseHead, effectiveURL: String) -> Bool {
            self.head = head
            return true
        }
        func exchange(progressReceived received: Int64, sent: Int64) -> Bool {
            self.sent = max(self.sent, sent)
            if let rate = pacer.tick(bytes: self.sent) { emit(.progress(bytes: self.sent, total: nil, rate: rate)) }
            return true
        }
    }
}
