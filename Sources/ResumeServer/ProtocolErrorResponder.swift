import NIOCore
import NIOHTTP1

/// Answers a request the HTTP parser gave up on, then lets the pipeline close the connection:
/// `431` when its head passed the size limit, `400` for anything else.
///
/// NIO's own `HTTPServerProtocolErrorHandler` says 400 to both; a client that sent too large a head
/// (a cookie jar, a long token) deserves to be told which limit it hit.
final class ProtocolErrorResponder: ChannelDuplexHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// The most bytes of header fields a request may carry (the request line aside).
    static let maximumHeadSize = 64 * 1024

    private var responseUnterminated = false

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        guard let error = error as? HTTPParserError else {
            context.fireErrorCaught(error)
            return
        }
        // Only when no response is half written; the decoder closes the connection after this.
        if !responseUnterminated {
            let status: HTTPResponseStatus = error == .headerOverflow ? .requestHeaderFieldsTooLarge : .badRequest
            let headers = HTTPHeaders([("Connection", "close"), ("Content-Length", "0")])
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
        context.fireErrorCaught(error)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head) where head.status.code >= 200: responseUnterminated = true
        case .end: responseUnterminated = false
        default: break
        }
        context.write(data, promise: promise)
    }

    static var decoderLimits: NIOHTTPDecoderLimitConfiguration {
        var limits = NIOHTTPDecoderLimitConfiguration()
        limits.maxHeaderFieldSize = maximumHeadSize
        limits.maxHeaderListSize = maximumHeadSize
        return limits
    }
}
