#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

enum Standard {
    /// One line to standard error in a single system call, so lines from several threads never interleave:
    /// the line's own bytes and its newline in one `writev` (no copy of the line with its newline, which
    /// `serve` would make for every request it logs). Written to the end if the call is cut short.
    static func error(_ line: String) {
        var line = line
        line.withUTF8 { text in
            var newline = UInt8(ascii: "\n")
            let total = text.count + 1
            var written = withUnsafeMutablePointer(to: &newline) { newline in
                var parts = (
                    iovec(iov_base: UnsafeMutableRawPointer(mutating: text.baseAddress), iov_len: text.count),
                    iovec(iov_base: newline, iov_len: 1)
                )
                return withUnsafeMutablePointer(to: &parts) {
                    $0.withMemoryRebound(to: iovec.self, capacity: 2) { writev(STDERR_FILENO, $0, 2) }
                }
            }
            if written == total { return }
            if written < 0 {
                guard errno == EINTR else { return }
                written = 0
            }
            var rest = Array(text)
            rest.append(newline)
            rest.withUnsafeBufferPointer { buffer in
                var offset = written
                while offset < total {
                    let n = write(STDERR_FILENO, buffer.baseAddress! + offset, total - offset)
                    if n <= 0 { if n < 0 && errno == EINTR { continue }; return }
                    offset += n
                }
            }
        }
    }
}
