import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import NIOPosix
import NIOResumableUpload

#if canImport(Glibc)
    import Glibc
#endif

/// Apple's `NIOResumableUpload` (interop versions 3, 5, 6) on 127.0.0.1, the reference peer for uploads.
///
/// Wired as measured in research/measurements.md §4: `HTTPResumableUploadHandler(context:channelConfigurator:)`
/// gives each logical upload a fresh `UploadSink` that lives across POST → HEAD → PATCH, and the context's
/// origin carries the real bound port (it is built from the first connection's local address, so the
/// server can bind port 0). Completed uploads land in `storage` under the last component of the request
/// path. In `plainMode` there is no resumable layer at all (never a 104): a plain server that stores
/// POST/PUT bodies, answers `100 Continue` to `Expect: 100-continue` like common servers, and 201 at the end.
///
/// ```swift
/// let peer = try await UploadPeer()
/// // resumectl upload FILE peer.url(for: "big.bin")
/// #expect(try peer.storedSHA256("big.bin") == sha256(file: FILE))
/// ```
public final class UploadPeer: Sendable {
    public let port: Int
    public let plainMode: Bool
    /// Where uploads are stored.
    public let storage: TempDirectory
    private let listener: any Channel
    private let registry: ChannelRegistry
    private let state: UploadPeerState

    /// - Parameters:
    ///   - plainMode: no draft support: a plain HTTP upload server.
    ///   - resumptionTimeout: how long an interrupted upload waits for its client to resume (NIO's
    ///     `HTTPResumableUploadContext(timeout:)`; the library default is one hour).
    public init(plainMode: Bool = false, resumptionTimeout: Duration = .seconds(120)) async throws {
        let storage = try TempDirectory(prefix: "resumectl-uploads")
        let state = UploadPeerState(directory: storage.path)
        let registry = ChannelRegistry()
        let timeout = TimeAmount(resumptionTimeout)
        let listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                registry.add(channel)
                return channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.configureHTTPServerPipeline()
                    try sync.addHandler(HTTP1ToHTTPServerCodec(secure: false))
                    try sync.addHandler(RequestRecorder(state: state))
                    if plainMode {
                        try sync.addHandler(UploadSink(state: state, sendsContinue: true))
                    } else {
                        let context = try state.uploadContext(localAddress: channel.localAddress, timeout: timeout)
                        try sync.addHandler(
                            HTTPResumableUploadHandler(context: context) { uploadChannel in
                                try? uploadChannel.pipeline.syncOperations.addHandler(
                                    UploadSink(state: state, sendsContinue: false))
                            })
                    }
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        self.port = try listener.localAddress.flatMap(\.port).orThrow("no local port")
        self.plainMode = plainMode
        self.storage = storage
        self.listener = listener
        self.registry = registry
        self.state = state
    }

    /// Makes the upload URLs in `Location` point at `origin` (e.g. a `FaultProxy` in front of this peer),
    /// so that HEAD and PATCH pass the proxy too. Call it before the first request.
    public func advertise(origin: String) {
        state.locked.withLock { $0.origin = origin }
    }

    /// `http://127.0.0.1:PORT`
    public var baseURL: String { "http://127.0.0.1:\(port)" }

    /// The URL to upload `name` to; it is stored as `storedPath(name)`.
    public func url(for name: String) -> String {
        baseURL + "/" + (name.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? name)
    }

    /// Where an upload to `url(for: name)` is (being) written.
    public func storedPath(_ name: String) -> String { storage.path(name) }

    /// SHA-256 (hex) of the stored upload `name`.
    public func storedSHA256(_ name: String) throws -> String { try sha256(file: storedPath(name)) }

    /// The upload stored as `name` (the last one, if the name was uploaded more than once).
    public func upload(named name: String) -> PeerUploadRecord? { state.locked.withLock { $0.uploads[name] } }

    /// Every upload begun, keyed by stored name.
    public var uploads: [String: PeerUploadRecord] { state.locked.withLock { $0.uploads } }

    /// Body bytes the application side received for upload `name` (each byte once, across resumptions).
    public func bytesReceived(_ name: String) -> Int { upload(named: name)?.bytesReceived ?? 0 }

    /// Every request so far as it arrived on the wire (before the resumable layer), with the statuses sent.
    public var requests: [RecordedRequest] { state.locked.withLock { $0.requests } }

    /// Closes the listener and every open connection. Upload state lives in memory only: a new peer knows
    /// nothing of this one's uploads, like a restarted server.
    public func stop() async {
        try? await registry.closeAll(listener: listener).get()
    }

    deinit {
        _ = registry.closeAll(listener: listener)
    }
}

/// One upload as the application behind the resumable layer saw it.
public struct PeerUploadRecord: Sendable {
    public let name: String
    public let path: String
    public let method: String
    /// Header fields of the request that created the upload (as forwarded by the resumable layer).
    public let headers: [(name: String, value: String)]
    public internal(set) var bytesReceived = 0
    /// The request ended normally and the file is closed.
    public internal(set) var completed = false
    /// Why the upload ended without completing (resumption timeout, cancel, I/O error…).
    public internal(set) var failure: String?
}

final class UploadPeerState: Sendable {
    struct Shared: Sendable {
        var uploads: [String: PeerUploadRecord] = [:]
        var requests: [RecordedRequest] = []
        var context: HTTPResumableUploadContext?
        var origin: String?
    }

    let directory: String
    let locked = Locked(Shared())

    init(directory: String) { self.directory = directory }

    /// The one context of this server, built when the first connection tells the bound port.
    func uploadContext(localAddress: SocketAddress?, timeout: TimeAmount) throws -> HTTPResumableUploadContext {
        let port = try localAddress.flatMap(\.port).orThrow("connection without local port")
        return locked.withLock { shared in
            if let context = shared.context { return context }
            let origin = shared.origin ?? "http://127.0.0.1:\(port)"
            let context = HTTPResumableUploadContext(origin: origin, timeout: timeout)
            shared.context = context
            return context
        }
    }

    /// The stored name for a request path: its last component, never a hidden or parent entry.
    func storedName(forPath path: String) -> String {
        let withoutQuery = path.split(separator: "?", maxSplits: 1).first.map(String.init) ?? ""
        let last = withoutQuery.split(separator: "/").last.map(String.init) ?? ""
        let name = last.removingPercentEncoding ?? last
        return name.isEmpty || name.hasPrefix(".") || name.contains("/") ? "upload.bin" : name
    }
}

/// Records every request head and body size on the wire, and the status of every response head (1xx
/// included) sent back on the connection.
final class RequestRecorder: ChannelDuplexHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let state: UploadPeerState
    private var index: Int?

    init(state: UploadPeerState) { self.state = state }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        switch part {
        case .head(let request):
            let record = RecordedRequest(
                method: request.method.rawValue, target: request.path ?? "",
                headers: request.headerFields.map { ($0.name.rawName, $0.value) })
            index = state.locked.withLock {
                $0.requests.append(record)
                return $0.requests.count - 1
            }
        case .body(let buffer):
            if let index {
                let count = buffer.readableBytes
                state.locked.withLock { $0.requests[index].bodyBytes += count }
            }
        case .end:
            break
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .head(let response) = unwrapOutboundIn(data), let index {
            state.locked.withLock { $0.requests[index].responseStatuses.append(response.status.code) }
        }
        context.write(data, promise: promise)
    }
}

/// Writes one upload's body to `directory/<last path component>` with `write(2)` and answers 201 at the
/// end. Under the resumable layer one instance serves one logical upload, however many connections it takes.
final class UploadSink: ChannelInboundHandler {
    typealias InboundIn = HTTPRequestPart
    typealias OutboundOut = HTTPResponsePart

    private let state: UploadPeerState
    private let sendsContinue: Bool
    private var fd: Int32 = -1
    private var name: String?
    /// Each upload writes a file of its own and renames it into place when complete, as a real server
    /// must: an abandoned upload to the same name (its client started over) can then never write into
    /// the new one's bytes.
    private var temporaryPath: String?
    private var method: HTTPRequest.Method = .get
    private var bytes = 0

    init(state: UploadPeerState, sendsContinue: Bool) {
        self.state = state
        self.sendsContinue = sendsContinue
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let request):
            begin(request, context: context)
        case .body(let buffer):
            guard let name else { return }
            bytes += buffer.readableBytes
            if fd >= 0, !writeAll(buffer) { fail("write failed: \(String(cString: strerror(errno)))") }
            let total = bytes
            state.locked.withLock { $0.uploads[name]?.bytesReceived = total }
        case .end:
            finish(context: context)
        }
    }

    private func begin(_ request: HTTPRequest, context: ChannelHandlerContext) {
        closeFile()
        method = request.method
        bytes = 0
        name = nil
        guard method == .post || method == .put else { return }
        let name = state.storedName(forPath: request.path ?? "/")
        let path = state.directory + "/" + name
        self.name = name
        let temporary =
            state.directory + "/." + name + ".upload-" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
        temporaryPath = temporary
        fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        let record = PeerUploadRecord(
            name: name, path: path, method: method.rawValue,
            headers: request.headerFields.map { ($0.name.rawName, $0.value) },
            failure: fd < 0 ? "open failed: \(String(cString: strerror(errno)))" : nil)
        state.locked.withLock { $0.uploads[name] = record }
        if sendsContinue, request.headerFields[.expect]?.lowercased() == "100-continue" {
            context.writeAndFlush(wrapOutboundOut(.head(HTTPResponse(status: .continue))), promise: nil)
        }
    }

    private func finish(context: ChannelHandlerContext) {
        closeFile()
        let status: HTTPResponse.Status
        var text = ""
        if let name {
            let failed = state.locked.withLock { shared -> Bool in
                guard var upload = shared.uploads[name] else { return true }
                if upload.failure == nil, let temporaryPath, rename(temporaryPath, upload.path) != 0 {
                    upload.failure = "rename failed: \(String(cString: strerror(errno)))"
                }
                upload.completed = upload.failure == nil
                shared.uploads[name] = upload
                return !upload.completed
            }
            temporaryPath = nil
            status = failed ? .internalServerError : .created
            text = "bytes=\(bytes)\n"
        } else {
            // HEAD/GET/OPTIONS that reach the application: nothing to serve. (The resumable layer turns an
            // OPTIONS 501 into 200 with Upload-Limit.)
            status = method == .get || method == .head ? .notFound : .notImplemented
        }
        name = nil
        var response = HTTPResponse(status: status)
        response.headerFields[.contentLength] = String(text.utf8.count)
        if !text.isEmpty { response.headerFields[.contentType] = "text/plain" }
        context.write(wrapOutboundOut(.head(response)), promise: nil)
        if !text.isEmpty {
            context.write(wrapOutboundOut(.body(context.channel.allocator.buffer(string: text))), promise: nil)
        }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail("\(error)")
        closeFile()
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if name != nil { fail("connection closed before the upload completed") }
        closeFile()
        context.fireChannelInactive()
    }

    private func fail(_ reason: String) {
        guard let name else { return }
        state.locked.withLock { shared in
            if shared.uploads[name]?.failure == nil { shared.uploads[name]?.failure = reason }
        }
    }

    private func writeAll(_ buffer: ByteBuffer) -> Bool {
        buffer.withUnsafeReadableBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return false }
                offset += n
            }
            return true
        }
    }

    private func closeFile() {
        if fd >= 0 { close(fd) }
        fd = -1
    }
}
