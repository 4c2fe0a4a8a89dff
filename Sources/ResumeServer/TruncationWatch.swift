#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import NIOCore

/// Closes a connection once the file it is sending has become shorter than the response needs.
///
/// NIO retries a sendfile(2) that returns 0 at end of file indefinitely, spinning a core for as
/// long as the client waits; nginx gives up on a truncated file too. Checked once a second.
final class TruncationWatch {
    private let handle: NIOFileHandle
    private let end: Int64
    private var scheduled: Scheduled<Void>?
    private var cancelled = false

    init(handle: NIOFileHandle, end: Int64) {
        self.handle = handle
        self.end = end
    }

    func start(context: ChannelHandlerContext) {
        guard !cancelled else { return }
        scheduled = context.eventLoop.assumeIsolated().scheduleTask(in: .seconds(1)) {
            let size = (try? self.handle.withUnsafeFileDescriptor { fd -> Int64 in
                var info = stat()
                return fstat(fd, &info) == 0 ? Int64(info.st_size) : -1
            }) ?? -1
            if size < self.end {
                context.close(promise: nil)
            } else {
                self.start(context: context)
            }
        }
    }

    func cancel() {
        cancelled = true
        scheduled?.cancel()
    }
}
