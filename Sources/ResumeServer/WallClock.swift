import Glibc

/// Wall-clock time in milliseconds since the epoch: upload expiry survives a restart, so it cannot
/// be measured on a monotonic clock.
enum WallClock {
    static func millis() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }
}
