import Glibc

/// Seconds on a clock that no change of the wall clock moves: for rates, deadlines and pacing.
enum Monotonic {
    static var now: Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}
