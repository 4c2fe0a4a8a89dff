import Glibc
import Dispatch
import NIOCore
import NIOHTTP1
import NIOPosix
import ResumeKit

extension StaticFileHandler {
    /// GET and HEAD with `--store s3://`: an object answers with its size and S3's ETag (ranges as for
    /// a file, the body streamed from a ranged `GET` pinned to that ETag); a folder, asked for by a
    /// browser, gets its page from `ListObjectsV2`.
    func serveObject(context: ChannelHandlerContext, head: HTTPRequestHead, components: [String], objects: S3Objects) {
        let format = FolderPage.Format(accept: head.headers["accept"])
        let page = format != nil ? Self.pathOnly(head.uri) : nil
        let uploads = settings.acceptsUploads
        threadPool.runIfActive(eventLoop: context.eventLoop) { () throws -> Served in
            if let info = try objects.info(components) { return .object(info) }
            guard let page, let format, let entries = try objects.folder(components) else { return .missing }
            guard page.hasSuffix("/") else { return .redirect(page + "/") }
            let answer = FolderPage.answer(format, path: components, entries: entries, uploads: uploads)
            return .page(answer.body, contentType: answer.contentType)
        }.assumeIsolated().whenComplete { result in
            switch result {
            case .success(.object(let info)):
                self.respond(context: context, head: head, object: info, objects: objects, components: components)
            case .success(.page(let body, let type)):
                self.respond(
                    context: context, head: head, status: .ok, extra: Self.pageHeaders, text: body, contentType: type)
            case .success(.redirect(let location)):
                self.respond(context: context, head: head, status: .movedPermanently, extra: [("Location", location)])
            case .success(.missing), .success(.file):
                self.respond(context: context, head: head, status: .notFound)
            case .failure(let error):
                objects.log?("\(head.method) \(head.uri): \(UploadFailure(error).reason)")
                self.respond(context: context, head: head, status: .badGateway)
            }
        }
    }

    private func respond(
        context: ChannelHandlerContext, head: HTTPRequestHead, object: S3Objects.Info, objects: S3Objects,
        components: [String]
    ) {
        guard context.channel.isActive else { return }
        let answer = RangedAnswer(
            method: head.method, headers: head.headers, size: object.size, etag: object.etag,
            lastModified: object.lastModified, lastModifiedIsStrong: false,
            after: connectionFields(now: Int64(time(nil))))
        let (status, bytes) = (answer.status, answer.bytes)
        let headers = HTTPHeaders(answer.fields)
        context.write(
            wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))),
            promise: nil)
        guard head.method == .GET && !bytes.isEmpty else {
            finish(context: context) {}
            return
        }
        context.flush()
        let pump = S3BodyPump(context: context, handler: self, expected: Int64(bytes.count))
        let request: HeaderFields = [
            "Range": "bytes=\(bytes.lowerBound)-\(bytes.upperBound - 1)", "If-Match": object.etag,
        ]
        let key = objects.key(components)
        threadPool.runIfActive(eventLoop: context.eventLoop) { () -> Bool in
            _ = objects.client.stream(key: key, headers: request, delegate: pump, cancellation: pump.cancellation)
            return pump.complete
        }.assumeIsolated().whenComplete { result in
            if case .success(true) = result {
                self.finish(context: context) {}
            } else {
                // The length was promised: a body cut short must end the connection.
                context.close(promise: nil)
            }
        }
    }
}

/// Carries a ranged S3 `GET`'s body to the client as it arrives: libcurl's thread waits while more than
/// a few chunks are unwritten, so memory stays flat whatever the object's size and the client's speed.
private final class S3BodyPump: ExchangeDelegate, @unchecked Sendable {
    let cancellation = Cancellation()
    private let loopBound: NIOLoopBound<(StaticFileHandler, ChannelHandlerContext)>
    private let eventLoop: any EventLoop
    private let allocator: ByteBufferAllocator
    private let room = DispatchSemaphore(value: 8)
    private let expected: Int64
    private var sent: Int64 = 0
    private var refused = false

    init(context: ChannelHandlerContext, handler: StaticFileHandler, expected: Int64) {
        loopBound = NIOLoopBound((handler, context), eventLoop: context.eventLoop)
        eventLoop = context.eventLoop
        allocator = context.channel.allocator
        self.expected = expected
    }

    /// Every promised byte went out.
    var complete: Bool { !refused && sent == expected }

    func exchange(head: ResponseHead, effectiveURL: String) -> Bool {
        // 206 for the range asked (or 200 for a whole object); anything else (412: the object changed) ends it.
        refused = !(head.status == 206 || head.status == 200)
        return !refused
    }

    func exchange(body bytes: UnsafeRawBufferPointer) -> Bool {
        guard !cancellation.isStopped, sent + Int64(bytes.count) <= expected else { return false }
        room.wait()
        var chunk = allocator.buffer(capacity: bytes.count)
        chunk.writeBytes(bytes)
        let buffer = chunk
        sent += Int64(bytes.count)
        let loopBound = loopBound
        let room = room
        let cancellation = cancellation
        eventLoop.execute {
            let (handler, context) = loopBound.value
            context.writeAndFlush(handler.wrapOutboundOut(.body(.byteBuffer(buffer)))).whenComplete { result in
                if case .failure = result { cancellation.stop(.interrupt) }
                room.signal()
            }
        }
        return true
    }
}
