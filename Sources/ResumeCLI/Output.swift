import Glibc
import ResumeKit

/// Unbuffered writes to the standard streams (C's `stdout` is not concurrency-safe in Swift 6).
enum Output {
    static func stdout(_ text: String) { write(1, text) }
    static func stderr(_ text: String) { write(2, text) }

    private static func write(_ fd: Int32, _ text: String) {
        var bytes = Array(text.utf8)
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeMutableBytes { Glibc.write(fd, $0.baseAddress! + done, $0.count - done) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return }
            done += n
        }
    }
}
