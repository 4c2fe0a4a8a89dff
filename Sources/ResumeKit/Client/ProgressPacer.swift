/// Paces `progress` events to at most four a second and measures the rate over the last second or so.
struct ProgressPacer {
    private var lastEmit: Double
    private var window: (time: Double, bytes: Int64)
    private(set) var rate: Double = 0

    init(now: Double = Monotonic.now, bytes: Int64 = 0) {
        lastEmit = now
        window = (now, bytes)
    }

    /// The rate to report now, or nil when the last event is less than a quarter second old.
    mutating func tick(bytes: Int64, now: Double = Monotonic.now) -> Double? {
        guard now - lastEmit >= 0.25 else { return nil }
        lastEmit = now
        if now - window.time >= 1 {
            rate = Double(max(0, bytes - window.bytes)) / (now - window.time)
            window = (now, bytes)
        }
        return rate
    }
}
