import NIOCore
import NIOHTTP1

/// Everything `serve` notes about each request, in one handler right behind the HTTP codec, so that
/// each request part and each response part is looked at once, not once per observer:
///
/// - **Malformed requests.** A request the HTTP parser gave up on is answered `431` when its head
///   passed the size limit, `400` for anything else (NIO's own error handler says 400 to both), unless
///   a response is half written; the pipeline then closes the connection.
/// - **Head timeout.** A connection whose next request head does not arrive in full within the limit,
///   counted from the connection's start or from the end of the previous response, is closed (a client
///   sending its head a byte at a time holds a descriptor and a parser for as long as it likes
///   otherwise). A request being received or answered is never timed here. One timer per connection:
///   a request only notes when the wait began (or that it ended), and the timer, when it fires, closes
///   the connection or sets itself for the rest of the wait (scheduling and cancelling a timer per
///   request cost 8 % of a keep-alive request's instructions: NIO finds a cancelled task by a scan).
/// - **Body timeout.** A request body that sends nothing for `--body-timeout` while the server waits for it
///   (a read was asked for: an upload writing to disk holds its reads, and that time is not the client's) is
///   ended and its connection closed, as nginx's `client_body_timeout` does; the upload handlers then keep
///   what arrived as after any cut. Without it, anyone allowed to upload holds a connection for ever.
/// - **The method.** ``MethodOverride`` is applied to each head here, before any handler reads it.
/// - **The log line**, `METHOD TARGET STATUS in=BYTES out=BYTES`, once the response's end is written
///   (`out` counts bytes handed to NIO, which a client may not have taken in full).
/// - **The metrics**: each answered request by method and status, timed from its head to the end of
///   its answer. A request whose connection closed before any answer is not counted (it has no status).
///
/// It sits below the static-file, tus and upload handlers and the login gate, so it sees every
/// exchange, including the ones they answer themselves. Its own 431/400 answers do not pass it.
final class ExchangeObserver: ChannelDuplexHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// The most bytes of header fields a request may carry (the request line aside).
    static let maximumHeadSize = 64 * 1024

    static var decoderLimits: NIOHTTPDecoderLimitConfiguration {
        var limits = NIOHTTPDecoderLimitConfiguration()
        limits.maxHeaderFieldSize = maximumHeadSize
        limits.maxHeaderListSize = maximumHeadSize
        return limits
    }

    private struct Exchange {
        var method: HTTPMethod
        var target: String
        var start: NIODeadline
        var status: UInt = 0
        var received = 0
        var sent = 0
        /// Its line was written early (the parser gave up during it); the metrics still count its answer.
        var logged = false

        func line(status override: UInt? = nil) -> String {
            let status = override ?? self.status
            let shown = status == 0 ? "-" : String(status)
            return "\(method.rawValue) \(target) \(shown) in=\(max(received, 0)) out=\(max(sent, 0))"
        }
    }

    private let headLimit: TimeAmount
    private let bodyLimit: TimeAmount
    private let log: (@Sendable (String) -> Void)?
    private let metrics: ServerMetrics?
    /// Requests whose head arrived and whose response has not ended, oldest first. Several only when a
    /// response ends before its request does; NIO's pipelining handler holds the next request back
    /// until then, so this stays tiny.
    private var exchanges: [Exchange] = []
    /// A final response head was written and its end not yet.
    private var responseUnterminated = false
    private var timer: (task: Scheduled<Void>, deadline: NIODeadline)?
    /// The wait the timer watches: for the next head (no request in progress), or for the next part of a
    /// body the server asked to read; `nil` while neither.
    private var waiting: (since: NIODeadline, limit: TimeAmount, body: Bool)?
    /// A request's head arrived and its end has not.
    private var receivingBody = false

    init(headLimit: TimeAmount, bodyLimit: TimeAmount, log: (@Sendable (String) -> Void)?, metrics: ServerMetrics?) {
        self.headLimit = headLimit
        self.bodyLimit = bodyLimit
        self.log = log
        self.metrics = metrics
    }

    // MARK: Inbound

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { startWaiting(context: context, now: .now(), limit: headLimit) }
    }

    func channelActive(context: ChannelHandlerContext) {
        startWaiting(context: context, now: .now(), limit: headLimit)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(var head):
            waiting = nil
            receivingBody = true
            exchanges.append(Exchange(method: head.method, target: head.uri, start: .now()))
            if let override = head.headers.first(name: MethodOverride.headerName) {
                let method = MethodOverride.effective(
                    requestMethod: head.method.rawValue, override: override,
                    isTus: head.headers.contains(name: "tus-resumable"))
                if method != head.method.rawValue {
                    head.method = HTTPMethod(rawValue: method)
                    context.fireChannelRead(wrapInboundOut(.head(head)))
                    return
                }
            }
        case .body(let body):
            if waiting?.body == true { waiting = nil }
            if !exchanges.isEmpty { exchanges[exchanges.count - 1].received += body.readableBytes }
        case .end:
            if waiting?.body == true { waiting = nil }
            receivingBody = false
        }
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        waiting = nil
        timer?.task.cancel()
        timer = nil
        if let log {
            for exchange in exchanges where !exchange.logged {
                log(exchange.line() + " (connection closed)")
            }
        }
        exchanges.removeAll()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        guard let error = error as? HTTPParserError else {
            context.fireErrorCaught(error)
            return
        }
        let status: HTTPResponseStatus = error == .headerOverflow ? .requestHeaderFieldsTooLarge : .badRequest
        // Only when no response is half written; the decoder closes the connection after this.
        if !responseUnterminated {
            let headers = HTTPHeaders([("Connection", "close"), ("Content-Length", "0")])
            _ = context.writeAnswer(HTTPResponseHead(version: .http1_1, status: status, headers: headers))
        }
        // A body cut short also surfaces as a parser error; `channelInactive` reports that one.
        if error != .invalidEOFState, let log {
            var line = Exchange(method: .RAW(value: "-"), target: "-", start: .now()).line(status: status.code)
            if let last = exchanges.indices.last, !exchanges[last].logged {
                exchanges[last].logged = true
                line = exchanges[last].line(status: status.code)
            }
            log(line + " (malformed request: \(error))")
        }
        context.fireErrorCaught(error)
    }

    // MARK: Outbound

    func read(context: ChannelHandlerContext) {
        if receivingBody && waiting == nil { startWaiting(context: context, now: .now(), limit: bodyLimit, body: true) }
        context.read()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head) where head.status.code >= 200:
            responseUnterminated = true
            if !exchanges.isEmpty { exchanges[0].status = head.status.code }
        case .head:
            break  // 100 Continue, 104 Upload Resumption Supported
        case .body(.byteBuffer(let buffer)):
            if !exchanges.isEmpty { exchanges[0].sent += buffer.readableBytes }
        case .body(.fileRegion(let region)):
            if !exchanges.isEmpty { exchanges[0].sent += region.readableBytes }
        case .end:
            responseUnterminated = false
            ended(context: context, data: data, promise: promise)
            return
        }
        context.write(data, promise: promise)
    }

    /// A response's end: its request is counted, the wait for the next head begins once no request is in
    /// progress (noted before the write: a pipelined head that the write releases ends the wait again),
    /// and the line is written once the end is.
    private func ended(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let now = NIODeadline.now()
        guard !exchanges.isEmpty else {
            startWaiting(context: context, now: now, limit: headLimit)
            context.write(data, promise: promise)
            return
        }
        let done = exchanges.removeFirst()
        if exchanges.isEmpty { startWaiting(context: context, now: now, limit: headLimit) }
        metrics?.request(
            method: done.method.rawValue, status: done.status, seconds: Double((now - done.start).nanoseconds) / 1e9)
        guard let log, !done.logged else {
            context.write(data, promise: promise)
            return
        }
        let line = done.line()
        let written = promise ?? context.eventLoop.makePromise()
        written.futureResult.whenComplete { result in
            if case .failure = result { log(line + " (aborted)") } else { log(line) }
        }
        context.write(data, promise: written)
    }

    // MARK: Head and body timeouts

    /// One timer serves both waits; it is moved earlier only when a wait ends before it fires (a body limit
    /// shorter than the head's), never cancelled for a request that ends in time.
    private func startWaiting(context: ChannelHandlerContext, now: NIODeadline, limit: TimeAmount, body: Bool = false) {
        waiting = (now, limit, body)
        if let timer {
            guard now + limit < timer.deadline else { return }
            timer.task.cancel()
        }
        schedule(context: context, at: now + limit)
    }

    private func schedule(context: ChannelHandlerContext, at deadline: NIODeadline) {
        let task = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) {
            self.timer = nil
            // A request in progress: the wait after its answer sets the timer again.
            guard let waiting = self.waiting else { return }
            guard NIODeadline.now() >= waiting.since + waiting.limit else {
                return self.schedule(context: context, at: waiting.since + waiting.limit)
            }
            if waiting.body { self.bodyTimedOut() }
            context.channel.close(promise: nil)
        }
        timer = (task, deadline)
    }

    /// The request whose body stalled is logged as such (its connection's close would say only "closed").
    private func bodyTimedOut() {
        metrics?.bodyTimeouts.add(1, ordering: .relaxed)
        guard let last = exchanges.indices.last, !exchanges[last].logged else { return }
        exchanges[last].logged = true
        let seconds = bodyLimit.nanoseconds / 1_000_000_000
        log?(exchanges[last].line() + " (no body byte for \(seconds) s: closed, --body-timeout)")
    }
}
