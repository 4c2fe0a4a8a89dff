import Glibc

/// The pipe a stream upload reads (stdin).
enum InputPipe {
    /// A pipe holds 64 KiB by default: each read then returns at most that, and the producer sleeps whenever
    /// the reader does. 1 MiB (the usual unprivileged maximum) quarters the reads and the wake-ups.
    static func widen(_ fd: Int32) {
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFIFO else { return }
        _ = fcntl(fd, 1031 /* F_SETPIPE_SZ */, Int32(1 << 20))
    }
}
