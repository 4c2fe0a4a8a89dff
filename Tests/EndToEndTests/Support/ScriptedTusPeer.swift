import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// A small tus 1.0.0 server on 127.0.0.1 that offers the checksum extension (tuspyserver does not):
/// OPTIONS, POST (relative `Location`), HEAD, PATCH with `Upload-Checksum` verified against
/// sha1, sha256 or md5, and 460 when it does not match. A PATCH listed in `corruptPatches` (0-based)
/// has one byte flipped on arrival, as a bad link would, so the server refuses it with 460.
public final class ScriptedTusPeer: Sendable {
    public let port: Int
    private let listener: any Channel
    private let registry: ChannelRegistry
    let state: Locked<TusPeerState>

    public init(algorithms: [String] = ["sha1", "sha256", "md5"], corruptPatches: Set<Int> = []) async throws {
        let state = Locked(TusPeerState(algorithms: algorithms, corruptPatches: corruptPatches))
        let registry = ChannelRegistry()
        let listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                registry.add(channel)
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(ScriptedTusHandler(state: state))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        self.port = try listener.localAddress.flatMap(\.port).orThrow("no local port")
        self.listener = listener
        self.registry = registry
        self.state = state
    }

    public var endpoint: String { "http://127.0.0.1:\(port)/files/" }

    /// Makes the upload URLs in `Location` absolute, on `origin` (e.g. a `FaultProxy` in front of this peer).
    public func advertise(origin: String) { state.withLock { $0.origin = origin } }
    public var requests: [RecordedRequest] { state.withLock { $0.requests } }

    /// SHA-256 (hex) of the bytes stored for upload `n` (1-based, in creation order).
    public func storedSHA256(upload n: Int = 1) -> String? {
        state.withLock { $0.uploads[n].map { lowercaseHex(Array(SHA256.hash(data: $0.bytes))) } }
    }

    deinit { _ = registry.closeAll(listener: listener) }
}

struct TusPeerState: Sendable {
    struct Upload: Sendable {
        var length: Int
        var bytes: [UInt8] = []
    }

    let algorithms: [String]
    let corruptPatches: Set<Int>
    var uploads: [Int: Upload] = [:]
    var requests: [RecordedRequest] = []
    var patches = 0
    /// Where `Location` points: nil for a relative one.
    var origin: String?

    init(algorithms: [String], corruptPatches: Set<Int>) {
        self.algorithms = algorithms
        self.corruptPatches = corruptPatches
    }

    /// The response to one whole request.
    mutating func respond(_ head: HTTPRequestHead, body: [UInt8]) -> (HTTPResponseStatus, HTTPHeaders) {
        var request = RecordedRequest(
            method: head.method.rawValue, target: head.uri, headers: head.headers.map { ($0.name, $0.value) })
        request.bodyBytes = body.count
        var headers: HTTPHeaders = ["Tus-Resumable": "1.0.0", "Content-Length": "0"]
        let status = answer(head, body: body, headers: &headers)
        request.responseStatuses = [Int(status.code)]
        requests.append(request)
        return (status, headers)
    }

    private mutating func answer(_ head: HTTPRequestHead, body: [UInt8], headers: inout HTTPHeaders)
        -> HTTPResponseStatus
    {
        let id = Int(head.uri.split(separator: "/").last ?? "")
        switch (head.method, id) {
        case (.OPTIONS, _):
            headers.add(name: "Tus-Version", value: "1.0.0")
            headers.add(name: "Tus-Extension", value: "creation,termination,checksum")
            headers.add(name: "Tus-Checksum-Algorithm", value: algorithms.joined(separator: ","))
            return .noContent
        case (.POST, nil):
            guard head.headers.first(name: "Tus-Resumable") == "1.0.0",
                let length = head.headers.first(name: "Upload-Length").flatMap(Int.init)
            else { return .badRequest }
            let n = uploads.count + 1
            uploads[n] = Upload(length: length)
            // relative on purpose, unless advertised
            headers.add(name: "Location", value: (origin ?? "") + "/files/\(n)")
            return .created
        case (.HEAD, let n?):
            guard let upload = uploads[n] else { return .notFound }
            headers.add(name: "Upload-Offset", value: String(upload.bytes.count))
            headers.add(name: "Upload-Length", value: String(upload.length))
            headers.add(name: "Cache-Control", value: "no-store")
            return .ok
        case (.PATCH, let n?):
            guard var upload = uploads[n] else { return .notFound }
            defer { patches += 1 }
            guard head.headers.first(name: "Content-Type") == "application/offset+octet-stream" else {
                return .unsupportedMediaType
            }
            guard head.headers.first(name: "Upload-Offset").flatMap(Int.init) == upload.bytes.count else {
                headers.add(name: "Upload-Offset", value: String(upload.bytes.count))
                return .conflict
            }
            var received = body
            if corruptPatches.contains(patches), !received.isEmpty { received[received.count / 2] ^= 0xFF }
            if let checksum = head.headers.first(name: "Upload-Checksum") {
                let parts = checksum.split(separator: " ")
                guard parts.count == 2, algorithms.contains(String(parts[0])),
                    let expected = Data(base64Encoded: String(parts[1]))
                else {
                    return .badRequest
                }
                let actual: [UInt8] =
                    switch parts[0] {
                    case "sha256": Array(SHA256.hash(data: received))
                    case "sha1": Array(Insecure.SHA1.hash(data: received))
                    default: Array(Insecure.MD5.hash(data: received))
                    }
                guard actual == Array(expected) else {
                    return HTTPResponseStatus(statusCode: 460, reasonPhrase: "Checksum Mismatch")
                }
            }
            upload.bytes += received
            uploads[n] = upload
            headers.add(name: "Upload-Offset", value: String(upload.bytes.count))
            return .noContent
        case (.DELETE, let n?):
            return uploads.removeValue(forKey: n) == nil ? .notFound : .noContent
        default:
            return .methodNotAllowed
        }
    }
}

final class ScriptedTusHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let state: Locked<TusPeerState>
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []

    init(state: Locked<TusPeerState>) { self.state = state }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let h):
            head = h
            body = []
        case .body(var buffer):
            body += buffer.readBytes(length: buffer.readableBytes) ?? []
        case .end:
            guard let head else { return }
            let (status, headers) = state.withLock { $0.respond(head, body: body) }
            context.write(
                wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))),
                promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            self.head = nil
        }
    }
}
