import NIOCore
import NIOHTTP1

/// Answers `GET /.resumectl/metrics` with ``ServerMetrics`` in Prometheus's text format; every other
/// request passes on. A dot path: no file can ever live there (``SafePath`` refuses dot names).
///
/// It sits behind the login gate, so with `--htpasswd` the metrics need a login (they tell who
/// uploads how much); `--metrics-public` puts it in front of the gate instead.
///
/// Inbound only: the answers of every other request need not pass through it on their way out.
final class MetricsEndpoint: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    static let path = "/.resumectl/metrics"
    /// Built once: 20 bytes, too long for a string kept inline, so `path + "?"` cost every request an allocation.
    private static let pathWithQuery = path + "?"

    struct Sources: Sendable {
        var metrics: ServerMetrics
        var connections: OpenConnections
        var table: UploadTable
    }

    private let sources: Sources
    /// Inside a request this handler answers: its parts go no further.
    private var answering = false

    init(sources: Sources) {
        self.sources = sources
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head) where head.uri == Self.path || head.uri.hasPrefix(Self.pathWithQuery):
            answering = true
            answer(context: context, head: head)
        case .end where answering:
            answering = false
        default:
            if !answering { context.fireChannelRead(data) }
        }
    }

    private func answer(context: ChannelHandlerContext, head: HTTPRequestHead) {
        let allowed = head.method == .GET || head.method == .HEAD
        let body =
            allowed
            ? sources.metrics.text(
                openConnections: sources.connections.count, refusedConnections: sources.connections.refused,
                inProgress: sources.table.inProgress())
            : "only GET and HEAD\n"
        var headers = HTTPHeaders()
        headers.add(
            name: "Content-Type",
            value: allowed ? "text/plain; version=0.0.4; charset=utf-8" : "text/plain; charset=utf-8")
        headers.add(name: "Content-Length", value: "\(body.utf8.count)")
        headers.add(name: "Cache-Control", value: "no-store")
        if !allowed { headers.add(name: "Allow", value: "GET, HEAD") }
        if !head.isKeepAlive { headers.add(name: "Connection", value: "close") }
        let status: HTTPResponseStatus = allowed ? .ok : .methodNotAllowed
        let keepAlive = head.isKeepAlive
        let channel = context.channel
        let answer = HTTPResponseHead(version: head.version, status: status, headers: headers)
        context.writeAnswer(answer, text: body, method: head.method).whenComplete { _ in
            if !keepAlive { channel.close(promise: nil) }
        }
    }
}
