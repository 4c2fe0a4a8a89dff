import NIOCore
import NIOHTTP1
#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// How ``TusHandler`` puts ``TusMachine``'s answers on the wire: no body, a `Date`, and whether the
/// connection ends with the request (one answered before its body was read does).
extension TusHandler {
    /// `100 Continue` to a client that waits for it (curl does, for a second, before a large body).
    func continueIfAsked(context: ChannelHandlerContext, head: HTTPRequestHead) {
        guard head.version == .http1_1,
            head.headers["expect"].contains(where: { $0.lowercased() == "100-continue" })
        else { return }
        context.writeAndFlush(
            wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: .continue))), promise: nil)
    }

    /// Answers a request whose head was just read: it has no body we want.
    func answer(context: ChannelHandlerContext, head: HTTPRequestHead, _ answer: TusMachine.Answer) {
        let hasBody =
            head.headers["content-length"].first.map { $0 != "0" } ?? !head.headers["transfer-encoding"].isEmpty
        state = .answered(requestEnded: false, close: hasBody)
        write(context: context, answer, close: hasBody, bodyless: head.method == .HEAD)
    }

    /// Answers the request in progress; with `close`, the connection ends once the request has.
    func answer(context: ChannelHandlerContext, _ answer: TusMachine.Answer, close: Bool) {
        let ended: Bool
        if case .appending(let append) = state { ended = append.ended } else { ended = false }
        if ended {
            state = close ? .answered(requestEnded: true, close: true) : .idle
        } else {
            state = .answered(requestEnded: false, close: true)
        }
        write(context: context, answer, close: close || !ended, bodyless: false)
        if ended && close { context.close(promise: nil) }
    }

    func write(context: ChannelHandlerContext, _ answer: TusMachine.Answer, close: Bool, bodyless: Bool) {
        guard context.channel.isActive else { return }
        let status =
            answer.status == 460
            ? HTTPResponseStatus(statusCode: 460, reasonPhrase: "Checksum Mismatch")
            : HTTPResponseStatus(statusCode: answer.status)
        var headers = HTTPHeaders(answer.pairs)
        headers.add(name: "Date", value: IMFDate.format(epochSeconds: Int64(time(nil))))
        if status != .noContent && !bodyless || status == .ok { headers.add(name: "Content-Length", value: "0") }
        if close { headers.add(name: "Connection", value: "close") }
        context.write(
            wrapOutboundOut(.head(HTTPResponseHead(version: version, status: status, headers: headers))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    /// Refuses a PATCH before its body: answered at once, the body dropped, the connection closed after.
    func refuse(context: ChannelHandlerContext, _ answer: TusMachine.Answer) {
        guard case .appending(let append) = state else { return }
        state = .answered(requestEnded: append.ended, close: true)
        write(context: context, answer, close: true, bodyless: false)
        receiver.resume(context: context)
        if append.ended { context.close(promise: nil) }
    }

    /// The store could not be read: 503, come back later.
    func unavailable(context: ChannelHandlerContext, head: HTTPRequestHead?, _ failure: UploadFailure) {
        settings.log?("tus upload failed: \(failure.reason)")
        let answer = TusMachine.failed(status: 503, retryAfter: UploadAdmission.retryAfterBusy)
        if let head {
            self.answer(context: context, head: head, answer)
        } else {
            refuse(context: context, answer)
        }
    }
}
