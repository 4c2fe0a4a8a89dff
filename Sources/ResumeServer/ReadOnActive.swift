import NIOCore

/// Starts reading on a TLS connection, whose reads are requested by hand (auto-read off).
///
/// NIO's resumable-upload handler at the end of the pipeline swallows the reads that auto-read
/// would request, so the handlers in front of it read for themselves. Over TLS that is not enough:
/// during the handshake, and while a TLS record is only partly in, no plaintext reaches them and
/// nobody would ask for more bytes. With auto-read off, NIOSSL asks itself in those cases; this
/// handler asks for the first bytes.
final class ReadOnActive: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    func channelActive(context: ChannelHandlerContext) {
        context.read()
        context.fireChannelActive()
    }
}
