import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// A small HTTP/1.1 server on 127.0.0.1 serving one in-memory body at every path, with the faults nginx
/// will not produce: ignored ranges, weak or missing validators, responses cut short, error bursts, digests.
///
/// Without behaviours it is a correct ranged server: strong `ETag` and `Last-Modified` (both derived from the
/// content, so new content means new validators), `Accept-Ranges: bytes`, single-range `Range` with
/// `If-Range` (strong comparison), 416 past the end, HEAD. Every request is recorded with its headers and
/// the statuses sent.
///
/// ```swift
/// let server = try await MisbehavingServer(content: bytes, behaviors: [.cutsEveryResponse(afterBytes: 65_536)])
/// // run the client against server.url(for: "file.bin"), then:
/// #expect(server.requests.dropFirst().allSatisfy { $0.header("If-Range") == server.etag })
/// ```
public final class MisbehavingServer: Sendable {
    public enum Behavior: Sendable {
        /// Every GET is a 200 with the full body and a strong ETag; no `Accept-Ranges`.
        case ignoresRange
        /// Ranges are honoured, but the only validator is `ETag: W/"…"` (so `If-Range` never matches).
        case weakETagOnly
        /// No ETag; a strong `Last-Modified` (an hour or more before `Date`).
        case lastModifiedOnly
        /// Neither ETag nor Last-Modified. With a provider, request *n* (0-based) gets `contentProvider(n)`.
        case noValidator(contentProvider: (@Sendable (_ request: Int) -> [UInt8])? = nil)
        /// Request *n* (0-based) gets `provider(n)`, with validators derived from it: changed bytes, new ETag.
        case contentProvider(@Sendable (_ request: Int) -> [UInt8])
        /// Headers announce the whole response, but the connection closes after `afterBytes` body bytes.
        /// Range and If-Range still work with a strong ETag, so a client can finish in several resumes.
        case cutsEveryResponse(afterBytes: Int)
        /// The first `count` requests get `code` (with `Retry-After: retryAfter` seconds if given), then
        /// requests are served normally.
        case status(Int, retryAfter: Int? = nil, count: Int = 1)
        /// RFC 9530 `Repr-Digest: sha-256=:BASE64:` of the full representation, on 200, 206 and HEAD.
        case reprDigest
        /// A `Repr-Digest` that does not match the content (to test checksum failures).
        case wrongReprDigest
        /// ETag and Last-Modified stay those of the first content whatever `replaceContent` serves later: a
        /// file rewritten within the second of an mtime-size ETag, or a CDN that keeps an old ETag.
        case lyingValidators
    }

    public let port: Int
    private let listener: any Channel
    private let registry: ChannelRegistry
    private let state: MisbehavingState

    /// Starts the server on 127.0.0.1 and a port chosen by the kernel.
    public init(content: [UInt8], behaviors: [Behavior] = []) async throws {
        let state = MisbehavingState(content: content, behaviors: behaviors)
        let registry = ChannelRegistry()
        let listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                registry.add(channel)
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(MisbehavingHandler(state: state))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        self.port = try listener.localAddress.flatMap(\.port).orThrow("no local port")
        self.listener = listener
        self.registry = registry
        self.state = state
    }

    /// `http://127.0.0.1:PORT`
    public var baseURL: String { "http://127.0.0.1:\(port)" }

    /// The URL of `path` (every path serves the same content).
    public func url(for path: String = "file.bin") -> String {
        baseURL + (path.hasPrefix("/") ? path : "/" + path)
    }

    /// Serves `content` from the next request on; ETag and Last-Modified change with it.
    public func replaceContent(_ content: [UInt8]) {
        state.locked.withLock { $0.content = Representation(content) }
    }

    /// The ETag header value sent for the current content (nil when the behaviour sends none).
    public var etag: String? { state.etag(for: state.locked.withLock { $0.content }) }

    /// The Last-Modified header value sent for the current content (nil when the behaviour sends none).
    public var lastModified: String? { state.lastModified(for: state.locked.withLock { $0.content }) }

    /// Every request so far, in arrival order.
    public var requests: [RecordedRequest] { state.locked.withLock { $0.requests } }
    public var requestCount: Int { state.locked.withLock { $0.requests.count } }
    /// Connections accepted so far.
    public var connectionCount: Int { state.locked.withLock { $0.connections } }

    /// Closes the listener and every open connection.
    public func stop() async {
        try? await registry.closeAll(listener: listener).get()
    }

    deinit {
        _ = registry.closeAll(listener: listener)
    }
}

/// One body and what its validators are made from.
struct Representation: Sendable {
    let bytes: [UInt8]
    let digest: [UInt8]

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
        self.digest = Array(SHA256.hash(data: bytes))
    }

    var strongETag: String { "\"" + lowercaseHex(digest.prefix(8)) + "\"" }

    /// Between 2023-11-14 and 2024-03-09 (never "now"), fixed by the content.
    var lastModifiedSeconds: Int {
        1_700_000_000 + Int(digest.prefix(3).reduce(0) { $0 << 8 | Int($1) } % 10_000_000)
    }
}

final class MisbehavingState: Sendable {
    struct Shared: Sendable {
        var content: Representation
        var requests: [RecordedRequest] = []
        var connections = 0
    }

    enum Validators { case strong, weakETag, lastModifiedOnly, none }
    enum Digest { case none, right, wrong }

    let locked: Locked<Shared>
    let honoursRange: Bool
    let validators: Validators
    let cutAfter: Int?
    let failure: (code: Int, retryAfter: Int?, count: Int)?
    let digest: Digest
    let provider: (@Sendable (Int) -> [UInt8])?
    /// The content whose validators are sent whatever is served (``MisbehavingServer/Behavior/lyingValidators``).
    let frozen: Representation?

    init(content: [UInt8], behaviors: [MisbehavingServer.Behavior]) {
        var honoursRange = true, validators = Validators.strong, digest = Digest.none
        var cutAfter: Int?, failure: (code: Int, retryAfter: Int?, count: Int)?, provider: (@Sendable (Int) -> [UInt8])?
        for behavior in behaviors {
            switch behavior {
            case .ignoresRange: honoursRange = false
            case .weakETagOnly: validators = .weakETag
            case .lastModifiedOnly: validators = .lastModifiedOnly
            case .noValidator(let contentProvider):
                validators = .none
                provider = contentProvider ?? provider
            case .contentProvider(let contentProvider): provider = contentProvider
            case .cutsEveryResponse(let bytes): cutAfter = bytes
            case .status(let code, let retryAfter, let count): failure = (code, retryAfter, count)
            case .reprDigest: digest = .right
            case .wrongReprDigest: digest = .wrong
            case .lyingValidators: break
            }
        }
        self.frozen =
            behaviors.contains { if case .lyingValidators = $0 { true } else { false } } ? Representation(content) : nil
        self.locked = Locked(Shared(content: Representation(content)))
        self.honoursRange = honoursRange
        self.validators = validators
        self.cutAfter = cutAfter
        self.failure = failure
        self.digest = digest
        self.provider = provider
    }

    func etag(for served: Representation) -> String? {
        let content = frozen ?? served
        return switch validators {
        case .strong: content.strongETag
        case .weakETag: "W/" + content.strongETag
        case .lastModifiedOnly, .none: nil
        }
    }

    func lastModified(for served: Representation) -> String? {
        let content = frozen ?? served
        return switch validators {
        case .strong, .lastModifiedOnly: httpDate(secondsSince1970: content.lastModifiedSeconds)
        case .weakETag, .none: nil
        }
    }

    /// Records the request head and returns its index.
    func record(_ head: HTTPRequestHead) -> Int {
        let request = RecordedRequest(
            method: head.method.rawValue, target: head.uri, headers: head.headers.map { ($0.name, $0.value) })
        return locked.withLock {
            $0.requests.append(request)
            return $0.requests.count - 1
        }
    }
}

/// What to send for one request: status, headers, the body slice, and where to cut it.
struct PlannedResponse {
    var status: HTTPResponseStatus
    var headers: HTTPHeaders
    var body: ArraySlice<UInt8>
    var cutAfter: Int?
}

extension MisbehavingState {
    func plan(method: HTTPMethod, headers requestHeaders: HTTPHeaders, index: Int) -> PlannedResponse {
        var headers = HTTPHeaders([("Date", httpDateNow()), ("Server", "misbehaving")])
        if let failure, index < failure.count {
            let body = Array("try again later\n".utf8)
            if let retryAfter = failure.retryAfter { headers.add(name: "Retry-After", value: String(retryAfter)) }
            headers.add(name: "Content-Type", value: "text/plain")
            headers.add(name: "Content-Length", value: String(body.count))
            return PlannedResponse(
                status: .init(statusCode: failure.code), headers: headers,
                body: method == .HEAD ? [] : body[...])
        }
        guard method == .GET || method == .HEAD else {
            headers.add(name: "Allow", value: "GET, HEAD")
            headers.add(name: "Content-Length", value: "0")
            return PlannedResponse(status: .methodNotAllowed, headers: headers, body: [])
        }
        let content = provider.map { Representation($0(index)) } ?? locked.withLock { $0.content }
        let length = content.bytes.count
        headers.add(name: "Content-Type", value: "application/octet-stream")
        if honoursRange { headers.add(name: "Accept-Ranges", value: "bytes") }
        let etag = etag(for: content), lastModified = lastModified(for: content)
        if let etag { headers.add(name: "ETag", value: etag) }
        if let lastModified { headers.add(name: "Last-Modified", value: lastModified) }
        switch digest {
        case .none: break
        case .right: headers.add(name: "Repr-Digest", value: "sha-256=:\(Data(content.digest).base64EncodedString()):")
        case .wrong:
            let wrong = SHA256.hash(data: content.bytes + [0x2A])
            headers.add(name: "Repr-Digest", value: "sha-256=:\(Data(wrong).base64EncodedString()):")
        }

        var status = HTTPResponseStatus.ok
        var body = content.bytes[...]
        if honoursRange, let rangeHeader = requestHeaders.first(name: "Range"),
            let range = parseSingleByteRange(rangeHeader, length: length),
            ifRangeAllows(requestHeaders.first(name: "If-Range"), etag: etag, lastModified: lastModified)
        {
            switch range {
            case .unsatisfiable:
                headers.add(name: "Content-Range", value: "bytes */\(length)")
                headers.add(name: "Content-Length", value: "0")
                return PlannedResponse(status: .rangeNotSatisfiable, headers: headers, body: [])
            case .bytes(let first, let last):
                status = .partialContent
                body = content.bytes[first...last]
                headers.add(name: "Content-Range", value: "bytes \(first)-\(last)/\(length)")
            }
        }
        headers.add(name: "Content-Length", value: String(body.count))
        return PlannedResponse(
            status: status, headers: headers, body: method == .HEAD ? [] : body,
            cutAfter: method == .HEAD ? nil : cutAfter)
    }

    /// If-Range needs a strong match (RFC 9110 §13.1.5): a weak ETag never matches, a date must equal the
    /// Last-Modified exactly.
    private func ifRangeAllows(_ ifRange: String?, etag: String?, lastModified: String?) -> Bool {
        guard let ifRange = ifRange?.trimmingCharacters(in: .whitespaces) else { return true }
        if ifRange.hasPrefix("W/") { return false }
        if ifRange.hasPrefix("\"") { return etag.map { !$0.hasPrefix("W/") && $0 == ifRange } ?? false }
        return lastModified == ifRange
    }
}

enum ByteRange: Equatable {
    case bytes(first: Int, last: Int)
    case unsatisfiable
}

/// `bytes=A-B`, `bytes=A-` or `bytes=-N` against `length`; nil (ignore the header, send 200) for anything
/// else, including several ranges.
func parseSingleByteRange(_ header: String, length: Int) -> ByteRange? {
    let value = header.trimmingCharacters(in: .whitespaces)
    guard value.lowercased().hasPrefix("bytes=") else { return nil }
    let spec = value.dropFirst("bytes=".count).trimmingCharacters(in: .whitespaces)
    guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return nil }
    let firstText = spec[..<dash].trimmingCharacters(in: .whitespaces)
    let lastText = spec[spec.index(after: dash)...].trimmingCharacters(in: .whitespaces)
    if firstText.isEmpty {
        guard let suffix = Int(lastText), suffix >= 0 else { return nil }
        if suffix == 0 || length == 0 { return .unsatisfiable }
        return .bytes(first: max(0, length - suffix), last: length - 1)
    }
    guard let first = Int(firstText), first >= 0 else { return nil }
    var last = length - 1
    if !lastText.isEmpty {
        guard let requested = Int(lastText), requested >= first else { return nil }
        last = min(requested, length - 1)
    }
    return first < length ? .bytes(first: first, last: last) : .unsatisfiable
}

final class MisbehavingHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let state: MisbehavingState
    private var head: HTTPRequestHead?
    private var index = 0

    init(state: MisbehavingState) { self.state = state }

    func channelActive(context: ChannelHandlerContext) {
        state.locked.withLock { $0.connections += 1 }
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            self.index = state.record(head)
        case .body(let body):
            let (index, count) = (self.index, body.readableBytes)
            state.locked.withLock { $0.requests[index].bodyBytes += count }
        case .end:
            guard let head else { return }
            self.head = nil
            respond(to: head, context: context)
        }
    }

    private func respond(to head: HTTPRequestHead, context: ChannelHandlerContext) {
        let planned = state.plan(method: head.method, headers: head.headers, index: index)
        let index = self.index
        state.locked.withLock { $0.requests[index].responseStatuses.append(Int(planned.status.code)) }
        var responseHead = HTTPResponseHead(version: head.version, status: planned.status, headers: planned.headers)
        if !head.isKeepAlive { responseHead.headers.replaceOrAdd(name: "Connection", value: "close") }
        context.write(wrapOutboundOut(.head(responseHead)), promise: nil)

        let channel = context.channel
        if let cut = planned.cutAfter, cut < planned.body.count {
            let partial = context.channel.allocator.buffer(bytes: planned.body.prefix(cut))
            context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(partial)))).whenComplete { _ in
                channel.close(promise: nil)
            }
            return
        }
        if !planned.body.isEmpty {
            context.write(
                wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: planned.body)))),
                promise: nil)
        }
        let keepAlive = head.isKeepAlive
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
            if !keepAlive { channel.close(promise: nil) }
        }
    }
}
