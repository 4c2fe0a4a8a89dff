import Glibc
import NIOCore
import NIOHTTP1
import NIOPosix

/// Sending a file, apart from the routing and refusals beside it: a GET or HEAD is answered from one
/// open descriptor (its validators and length read from it, so a file replaced meanwhile cannot mix
/// into the answer), as a `FileRegion` in the clear and as buffers behind TLS, where a region cannot go.
extension StaticFileHandler {
    func serve(context: ChannelHandlerContext, head: HTTPRequestHead) {
        mode = .serving
        if head.uri.hasPrefix(FolderPageAssets.prefix) {
            guard let asset = FolderPageAssets.asset(head.uri) else {
                respond(context: context, head: head, status: .notFound)
                return
            }
            respond(
                context: context, head: head, status: .ok, extra: Self.pageHeaders, text: asset.body,
                contentType: asset.contentType)
            return
        }
        let components: [String]
        do {
            components = try SafePath.components(ofTarget: head.uri)
        } catch {
            respond(context: context, head: head, refusal: error)
            return
        }
        if let objects = settings.objects {
            serveObject(context: context, head: head, components: components, objects: objects)
            return
        }
        let root = settings.root
        let digest = head.method == .HEAD && ReprDigest.wanted(head.headers["want-repr-digest"])
        if !digest, let file = ServedFile.openCached(components, root: root) {
            respond(context: context, head: head, file: file)
            return
        }
        let format = FolderPage.Format(accept: head.headers["accept"])
        let page = format != nil ? Self.pathOnly(head.uri) : nil
        let uploads = settings.acceptsUploads
        threadPool.runIfActive(eventLoop: context.eventLoop) { () throws -> Served in
            do {
                var file = try ServedFile.resolve(components, root: root)
                if digest {
                    file.reprDigest = (try? file.handle.withUnsafeFileDescriptor { ReprDigest.sha256(fd: $0) }) ?? nil
                }
                return .file(file)
            } catch let refusal as PathRefusal where refusal == .notFound && page != nil {
                // A folder, asked for by a browser or as a listing: its page (at its URL with a final
                // slash, so that relative links work).
                let folder = try SafePath.openBeneath(components, root: root, flags: O_RDONLY | O_DIRECTORY | O_CLOEXEC)
                guard let entries = FolderPage.entries(of: folder) else { throw PathRefusal.notFound }
                guard let page, let format, page.hasSuffix("/") else { return .redirect((page ?? "/") + "/") }
                let answer = FolderPage.answer(format, path: components, entries: entries, uploads: uploads)
                return .page(answer.body, contentType: answer.contentType)
            }
        }.assumeIsolated().whenComplete { result in
            switch result {
            case .success(.file(let file)):
                self.respond(context: context, head: head, file: file)
            case .success(.page(let body, let type)):
                self.respond(
                    context: context, head: head, status: .ok, extra: Self.pageHeaders, text: body, contentType: type)
            case .success(.redirect(let location)):
                self.respond(context: context, head: head, status: .movedPermanently, extra: [("Location", location)])
            case .failure(let refusal as PathRefusal):
                self.respond(context: context, head: head, refusal: refusal)
            case .success(.object), .success(.missing), .failure:
                self.respond(context: context, head: head, status: .internalServerError)
            }
        }
    }

    /// What a GET or HEAD resolves to (an object and nothing only on S3).
    enum Served {
        case file(ServedFile)
        case object(S3Objects.Info)
        case page(String, contentType: String)
        case redirect(String)
        case missing
    }

    static let pageHeaders = [
        ("Content-Security-Policy", FolderPage.contentSecurityPolicy),
        ("X-Content-Type-Options", "nosniff"),
        ("Cache-Control", "no-store"),
    ]

    private func respond(context: ChannelHandlerContext, head: HTTPRequestHead, file: ServedFile) {
        guard context.channel.isActive else {
            try? file.handle.close()
            return
        }
        let identity = file.identity
        let now = Int64(time(nil))
        if lastETag?.identity != identity { lastETag = (identity, identity.etag) }
        let answer = RangedAnswer(
            method: head.method, headers: head.headers, size: identity.size, etag: lastETag?.etag ?? identity.etag,
            lastModified: modifiedDates.format(epochSeconds: identity.modifiedSeconds),
            lastModifiedIsStrong: identity.lastModifiedIsStrong(now: now),
            after: connectionFields(now: now))
        let (status, bytes) = (answer.status, answer.bytes)
        var fields = answer.fields
        if let digest = file.reprDigest { fields.append(("Repr-Digest", digest)) }

        let responseHead = HTTPResponseHead(version: head.version, status: status, headers: HTTPHeaders(fields))
        let body = head.method == .GET && !bytes.isEmpty
        // The head and the file's first bytes in one segment (nginx's `tcp_nopush`): on its own, with
        // TCP_NODELAY, the head is a packet of its own that both ends handle, a tenth of a small
        // download's time on loopback. Uncorked once the answer is written, so nothing waits.
        let corked = body && !settings.secure && Self.cork(context, true)
        context.write(wrapOutboundOut(.head(responseHead)), promise: nil)
        if body && settings.secure {
            sendBuffered(context: context, file: file, bytes: bytes)
            return
        }
        let watch = truncationWatch
        if body {
            let region = FileRegion(
                fileHandle: file.handle,
                readerIndex: Int(bytes.lowerBound),
                endIndex: Int(bytes.upperBound)
            )
            context.write(wrapOutboundOut(.body(.fileRegion(region))), promise: nil)
            watch.watch(file.handle, end: bytes.upperBound, context: context)
        }
        finish(context: context) {
            watch.done(file.handle)
            try? file.handle.close()
            if corked { _ = Self.cork(context, false) }
        }
    }

    /// Sets or clears TCP_CORK; whether that worked.
    private static func cork(_ context: ChannelHandlerContext, _ on: Bool) -> Bool {
        let option = ChannelOptions.tcpOption(NIOBSDSocket.Option(rawValue: TCP_CORK))
        return (try? context.channel.syncOptions?.setOption(option, value: on ? 1 : 0)) != nil
    }

    /// The body as buffers read on the thread pool, each written before the next is read, so memory
    /// stays at one chunk per connection. A file that ends early ends the connection: the length
    /// was promised.
    private func sendBuffered(context: ChannelHandlerContext, file: ServedFile, bytes: Range<Int64>) {
        let loop = context.eventLoop
        let bound = NIOLoopBound((self, context), eventLoop: loop)
        let sent = NIOLoopBoundBox(Int64(0), eventLoop: loop)
        NonBlockingFileIO(threadPool: threadPool).readChunked(
            fileHandle: file.handle,
            fromOffset: bytes.lowerBound,
            byteCount: Int(bytes.count),
            chunkSize: Self.bufferedChunk,
            allocator: context.channel.allocator,
            eventLoop: loop
        ) { chunk in
            let (handler, context) = bound.value
            sent.value += Int64(chunk.readableBytes)
            return context.writeAndFlush(handler.wrapOutboundOut(.body(.byteBuffer(chunk))))
        }.assumeIsolated().whenComplete { result in
            let (handler, context) = bound.value
            if case .success = result, sent.value == Int64(bytes.count) {
                handler.finish(context: context) { try? file.handle.close() }
            } else {
                try? file.handle.close()
                context.close(promise: nil)
            }
        }
    }

    private static let bufferedChunk = 256 * 1024
}
