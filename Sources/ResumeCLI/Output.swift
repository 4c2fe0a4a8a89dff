import Glibc
import ResumeKit

/// Unbuffered writes to the standard streams (C's `stdout` is not concurrency-safe in Swift 6).
enum Output {
    static func stdout(_ text: String) { write(1, text) }
    static func stderr(_ text: String) { write(2, text) }

    private static func write(_ fd: Int32, _ text: String) {
        var text = text
        _ = text.withUTF8 { writeAll(fd, UnsafeRawBufferPointer($0)) }
    }
}
