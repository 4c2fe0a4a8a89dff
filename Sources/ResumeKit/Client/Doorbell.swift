import Dispatch
import Synchronization

/// A wake-up between threads: one waits for a change (up to a time), another rings after making it.
/// A ring with nobody waiting is kept for the next wait, so a change between a check and a wait is not lost.
final class Doorbell: Sendable {
    private let semaphore = DispatchSemaphore(value: 0)
    private let pending = Atomic<Bool>(false)

    func ring() {
        if !pending.exchange(true, ordering: .acquiringAndReleasing) { semaphore.signal() }
    }

    /// Returns after a ring, after `seconds`, or at once when `cancellation` is (or gets) stopped.
    func wait(seconds: Double, unless cancellation: Cancellation) {
        cancellation.ringing(self) {
            guard !cancellation.isStopped, seconds > 0 else { return }
            let nanoseconds = Int(min(seconds, 86_400) * 1e9)
            if semaphore.wait(timeout: .now() + .nanoseconds(nanoseconds)) == .success {
                pending.store(false, ordering: .releasing)
            }
        }
    }
}
