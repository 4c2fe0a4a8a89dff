import NIOCore
import NIOHTTP1

/// How ``DraftHandler`` answers: ``DraftMachine``'s answers or a bare status, the `104` before a
/// creation's body, and a refusal in the middle of a body (the rest is read and dropped, then the
/// connection closes: closing at once could reset it under the answer).
extension DraftHandler {
    func refuseMidBody(context: ChannelHandlerContext, status: HTTPResponseStatus) {
        guard let current = exchange else { return }
        settings.log?("upload \(current.head.uri) refused: \(status.code) \(status.reasonPhrase) mid-body")
        var fields: [(String, String)] = []
        if status == .payloadTooLarge, current.kind == .ietf, let limit = settings.maxUploadSize {
            fields.append(("Upload-Limit", "max-size=\(limit)"))
        }
        answer(context: context, status: Int(status.code), fields: fields)
        if let sink = receiver.sink {
            let kind = current.kind
            sink.end(keep: false) { ending in
                if kind == .plain, case .settled(let record) = ending { self.receiver.drop(record.id) }
            }
        }
    }

    /// Storing failed while the body still arrives: the client hears it now; a plain upload's bytes go.
    func failMidBody(context: ChannelHandlerContext, _ failure: UploadFailure) {
        guard let current = exchange, !current.answered, !current.ended, let sink = receiver.sink else { return }
        fail(context: context, failure)
        let kind = current.kind
        sink.end(keep: kind != .plain) { ending in
            guard kind == .plain else { return }
            switch ending {
            case .settled(let record), .failed(_, let record): self.receiver.drop(record.id)
            }
        }
    }

    func fail(context: ChannelHandlerContext, _ failure: UploadFailure) {
        settings.log?("upload \(exchange?.head.uri ?? "") failed: \(failure.reason)")
        var fields: [(String, String)] = []
        if failure.status == 503 { fields.append(("Retry-After", "\(UploadAdmission.retryAfterBusy)")) }
        // The draft has no 423: an upload another instance is appending to is a conflict, and its
        // client asks for the offset again.
        answer(context: context, status: failure.status == 423 ? 409 : failure.status, fields: fields)
    }

    func answer(context: ChannelHandlerContext, _ answer: DraftMachine.Answer) {
        self.answer(context: context, status: answer.status, fields: answer.fields.map { ($0.name, $0.value) })
    }

    /// Answers the request; one that has not ended yet closes the connection once it has (its body is
    /// read and dropped meanwhile: closing at once could reset the connection under the answer).
    func answer(context: ChannelHandlerContext, status: Int, fields: [(String, String)]) {
        guard var current = exchange, !current.answered else { return }
        guard context.channel.isActive else {
            // The client left while the answer waited (for an older writer to stop): nothing goes out, not
            // even the response's end, which without its head would break the pipeline's order.
            exchange = nil
            return
        }
        let headers = current.head.headers
        let hasBody = headers["content-length"].first.map { $0 != "0" } ?? !headers["transfer-encoding"].isEmpty
        let close = (hasBody && !current.ended) || !current.head.isKeepAlive
        current.answered = true
        current.closeAfter = close
        exchange = current
        writeHead(context: context, status: status, fields: fields, close: close)
        let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if current.ended {
            exchange = nil
            if close { done.assumeIsolated().whenComplete { _ in context.close(promise: nil) } }
        } else {
            receiver.resume(context: context)
        }
    }

    func writeHead(context: ChannelHandlerContext, status: Int, fields: [(String, String)], close: Bool) {
        guard context.channel.isActive, let current = exchange else { return }
        var headers = HTTPHeaders(fields)
        if status >= 200 {
            if status != 204 && status != 304 { headers.add(name: "Content-Length", value: "0") }
            if close { headers.add(name: "Connection", value: "close") }
        }
        let code =
            status == 104
            ? HTTPResponseStatus(statusCode: 104, reasonPhrase: "Upload Resumption Supported")
            : HTTPResponseStatus(statusCode: status)
        context.write(
            wrapOutboundOut(.head(HTTPResponseHead(version: current.head.version, status: code, headers: headers))),
            promise: nil)
    }
}
