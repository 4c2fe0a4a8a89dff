import Glibc
import NIOCore
import NIOHTTP1

/// How ``UploadHandler`` puts answers on the wire: no body, a `Date`; interim answers (`100`, the draft's `104`);
/// and refusals in the middle of a body, whose rest is read and dropped before the connection closes
/// (closing at once could reset it under the answer).
extension UploadHandler {
    /// Answers the request. One whose body has not all arrived closes the connection once it has.
    func answer(context: ChannelHandlerContext, _ answer: UploadAnswer) {
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
        receiver.discard()
        writeHead(context: context, answer, close: close)
        let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if current.ended {
            exchange = nil
            if close { done.assumeIsolated().whenComplete { _ in context.close(promise: nil) } }
        } else {
            receiver.resume(context: context)
        }
    }

    /// A `1xx` before the final answer.
    func interim(context: ChannelHandlerContext, _ answer: UploadAnswer) {
        writeHead(context: context, answer, close: false)
        context.flush()
    }

    /// `100 Continue` to a client that waits for it before its body (libcurl waits a second for it, and a
    /// `104` does not end that wait).
    func continueIfAsked(context: ChannelHandlerContext, head: HTTPRequestHead) {
        guard head.version == .http1_1,
            head.headers["expect"].contains(where: { $0.lowercased() == "100-continue" })
        else { return }
        interim(context: context, UploadAnswer(status: 100, fields: []))
    }

    private func writeHead(context: ChannelHandlerContext, _ answer: UploadAnswer, close: Bool) {
        guard context.channel.isActive, let current = exchange else { return }
        var headers = HTTPHeaders(answer.pairs)
        if answer.status >= 200 {
            headers.add(name: "Date", value: IMFDate.format(epochSeconds: Int64(time(nil))))
            if answer.status != 204 && answer.status != 304 { headers.add(name: "Content-Length", value: "0") }
            if close { headers.add(name: "Connection", value: "close") }
        }
        let status =
            switch answer.status {
            case 104: HTTPResponseStatus(statusCode: 104, reasonPhrase: "Upload Resumption Supported")
            case 460: HTTPResponseStatus(statusCode: 460, reasonPhrase: "Checksum Mismatch")
            default: HTTPResponseStatus(statusCode: answer.status)
            }
        context.write(
            wrapOutboundOut(.head(HTTPResponseHead(version: current.head.version, status: status, headers: headers))),
            promise: nil)
    }

    func fail(context: ChannelHandlerContext, _ failure: UploadFailure) {
        guard let current = exchange else { return }
        settings.log?("\(current.dialect.logName) \(current.head.uri) failed: \(failure.reason)")
        answer(context: context, current.dialect.failed(failure))
    }

    /// The body went past what the upload may hold: the client hears it now; what was stored counts for a
    /// resumable upload (unless a checksum had to vouch for it).
    func refuseMidBody(context: ChannelHandlerContext, _ refusal: UploadAnswer) {
        guard let current = exchange, !current.answered else { return }
        settings.log?("\(current.dialect.logName) \(current.head.uri) refused: \(refusal.status) mid-body")
        answer(context: context, refusal)
        endMidBody(current)
    }

    /// Storing failed while the body still arrives (a full disk): the client hears it now, instead of sending
    /// the rest for nothing.
    func failMidBody(context: ChannelHandlerContext, _ failure: UploadFailure) {
        guard let current = exchange, !current.answered, !current.ended else { return }
        fail(context: context, failure)
        endMidBody(current)
    }

    /// A body cut short: a resumable upload keeps what arrived (unless a checksum had to vouch for it); a plain
    /// one is worthless and goes (`abandoned`: its client left, as the log says).
    func endMidBody(_ current: Exchange, abandoned: Bool = false) {
        let dialect = current.dialect
        receiver.sink?.end(keep: dialect.keepsPartialBytes && current.checksum == nil) { ending in
            guard !dialect.keepsPartialBytes else { return }
            switch ending {
            case .settled(let record), .failed(_, let record):
                if abandoned { self.settings.log?("upload \(current.head.uri) abandoned after \(record.offset) bytes") }
                self.receiver.drop(record.id)
            }
        }
    }
}
