import Glibc
import NIOCore

/// An upload's open data file, written by the appender on the thread pool (every method blocks), so
/// that the store itself never holds a descriptor.
struct UploadData: Sendable {
    let descriptor: Int32

    /// Writes `buffers` one after another from `offset`.
    func write(_ buffers: [ByteBuffer], at offset: Int64) throws(UploadFailure) {
        var position = offset
        for buffer in buffers {
            let failure = buffer.withUnsafeReadableBytes { Self.writeAll(descriptor, $0, at: position) }
            if let failure { throw UploadFailure(errno: failure, doing: "write") }
            position += Int64(buffer.readableBytes)
        }
    }

    /// Appends the first `count` bytes of the file `source` at this file's position, in the kernel (sendfile(2)).
    func append(from source: Int32, count: Int64) throws(UploadFailure) {
        var offset = off_t(0)
        while offset < count {
            let n = sendfile(descriptor, source, &offset, Int(count - Int64(offset)))
            if n < 0 && errno == EINTR { continue }
            if n < 0 { throw UploadFailure(errno: errno, doing: "copy a partial upload") }
            if n == 0 { throw UploadFailure(status: 410, "a partial upload is shorter than its length") }
        }
    }

    /// Makes what was written durable.
    func sync() throws(UploadFailure) {
        guard fdatasync(descriptor) == 0 else { throw UploadFailure(errno: errno, doing: "fdatasync") }
    }

    func close() {
        _ = Glibc.close(descriptor)
    }

    /// pwrite(2) until done; the errno of a failure.
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64) -> Int32? {
        var done = 0
        while done < bytes.count {
            let n = pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done))
            if n < 0 {
                if errno == EINTR { continue }
                return errno
            }
            done += n
        }
        return nil
    }
}
