import Glibc
import NIOCore

/// Closes a connection once the file it is sending has become shorter than the response needs.
///
/// NIO retries a sendfile(2) that returns 0 at end of file indefinitely, spinning a core for as
/// long as the client waits; nginx gives up on a truncated file too. Checked about once a second
/// while a file is being sent, by one timer per connection that stops once nothing is being sent:
/// a timer set and cancelled for every response cost a small download 4 % of its instructions.
final class TruncationWatch {
    /// The files of the responses being sent (more than one only when responses are pipelined).
    private var files: [(handle: NIOFileHandle, end: Int64)] = []
    private var scheduled = false

    /// Watches `handle` until ``done(_:)``: it must keep at least `end` bytes.
    func watch(_ handle: NIOFileHandle, end: Int64, context: ChannelHandlerContext) {
        files.append((handle, end))
        if !scheduled { schedule(context: context) }
    }

    /// Its response ended (called before the file is closed).
    func done(_ handle: NIOFileHandle) {
        files.removeAll { $0.handle === handle }
    }

    private func schedule(context: ChannelHandlerContext) {
        scheduled = true
        context.eventLoop.assumeIsolated().scheduleTask(in: .seconds(1)) {
            self.scheduled = false
            guard !self.files.isEmpty, context.channel.isActive else { return }
            for (handle, end) in self.files {
                let size =
                    (try? handle.withUnsafeFileDescriptor { fd -> Int64 in
                        var info = stat()
                        return fstat(fd, &info) == 0 ? Int64(info.st_size) : -1
                    }) ?? -1
                if size < end {
                    context.close(promise: nil)
                    return
                }
            }
            self.schedule(context: context)
        }
    }
}
