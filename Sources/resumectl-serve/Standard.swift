#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

enum Standard {
    /// One line to standard error in a single write(2), so lines from several threads never interleave.
    static func error(_ line: String) {
        var text = line + "\n"
        text.withUTF8 { buffer in
            var offset = 0
            while offset < buffer.count {
                let n = write(STDERR_FILENO, buffer.baseAddress! + offset, buffer.count - offset)
                if n <= 0 { if n < 0 && errno == EINTR { continue }; return }
                offset += n
            }
        }
    }
}
