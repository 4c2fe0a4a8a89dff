import NIOCore
import NIOHTTP1

/// Writes one line per request: `METHOD TARGET STATUS in=BYTES out=BYTES`.
///
/// It sits on the HTTP/1 side of the pipeline, below both the static-file handler and NIO's
/// resumable-upload handler, so it sees every exchange, including the ones NIO answers itself
/// (offset retrieval, conflicts, incomplete creations).
final class AccessLogHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private struct Exchange {
        var method: String
        var target: String
        var status: UInt = 0
        var received: Int = 0
        var sent: Int = 0

        var line: String {
            "\(method) \(target) \(status == 0 ? "-" : "\(status)") in=\(received) out=\(sent)"
        }
    }

    private let log: @Sendable (String) -> Void
    // Several only when a response ends before its request does; NIO's pipelining handler holds
    // back the next request until then, so this stays tiny.
    private var exchanges: [Exchange] = []

    init(log: @escaping @Sendable (String) -> Void) {
        self.log = log
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            exchanges.append(Exchange(method: head.method.rawValue, target: head.uri))
        case .body(let body):
            if !exchanges.isEmpty { exchanges[exchanges.count - 1].received += body.readableBytes }
        case .end:
            break
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if !exchanges.isEmpty {
            switch unwrapOutboundIn(data) {
            case .head(let head) where head.status.code >= 200:
                exchanges[0].status = head.status.code
            case .head:
                break  // 100 Continue, 104 Upload Resumption Supported
            case .body(.byteBuffer(let buffer)):
                exchanges[0].sent += buffer.readableBytes
            case .body(.fileRegion(let region)):
                exchanges[0].sent += region.readableBytes
            case .end:
                // Logged once written: `out` counts bytes handed to NIO, which a client may not
                // have taken in full.
                let line = exchanges.removeFirst().line
                let log = self.log
                let written = promise ?? context.eventLoop.makePromise()
                written.futureResult.whenComplete { result in
                    if case .failure = result { log(line + " (aborted)") } else { log(line) }
                }
                context.write(data, promise: written)
                return
            }
        }
        context.write(data, promise: promise)
    }

    func channelInactive(context: ChannelHandlerContext) {
        for exchange in exchanges {
            log(exchange.line + " (connection closed)")
        }
        exchanges.removeAll()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        // A body cut short also surfaces as a parser error; `channelInactive` reports that one.
        if let error = error as? HTTPParserError, error != .invalidEOFState {
            // ProtocolErrorResponder has already answered 431 or 400.
            var exchange = exchanges.popLast() ?? Exchange(method: "-", target: "-")
            exchange.status = error == .headerOverflow ? 431 : 400
            log(exchange.line + " (malformed request: \(error))")
        }
        context.fireErrorCaught(error)
    }
}
