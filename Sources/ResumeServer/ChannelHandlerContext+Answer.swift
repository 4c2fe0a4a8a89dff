import NIOCore
import NIOHTTP1

extension ChannelHandlerContext {
    /// Writes a whole answer from a handler whose outbound parts are `HTTPServerResponsePart`s: `head`, `text`
    /// unless it is empty or the request's `method` is HEAD (whose length `head` announces all the same), and the
    /// end, flushed.
    func writeAnswer(_ head: HTTPResponseHead, text: String = "", method: HTTPMethod? = nil) -> EventLoopFuture<Void> {
        write(NIOAny(HTTPServerResponsePart.head(head)), promise: nil)
        if method != .HEAD && !text.isEmpty {
            let body = channel.allocator.buffer(string: text)
            write(NIOAny(HTTPServerResponsePart.body(.byteBuffer(body))), promise: nil)
        }
        return writeAndFlush(NIOAny(HTTPServerResponsePart.end(nil)))
    }
}
