import Synchronization
@testable import ResumeKit

/// The retry clock of the unit tests: it records every delay it is asked for and returns at once (false once
/// the transfer was stopped, as a real sleep would), so that a retry table runs in milliseconds.
final class NoSleepClock: RetryClock, @unchecked Sendable {
    private let delays = Mutex<[Double]>([])
    var now: Int64 { 1_700_000_000 }
    /// The delays asked for, in order.
    var slept: [Double] { delays.withLock { $0 } }

    func sleep(seconds: Double, cancellation: Cancellation) -> Bool {
        delays.withLock { $0.append(seconds) }
        return !cancellation.isStopped
    }
}
