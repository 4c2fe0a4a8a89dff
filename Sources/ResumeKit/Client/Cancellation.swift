import Dispatch
import Synchronization

/// Why a transfer was asked to stop.
public enum StopReason: Int, Sendable {
    /// Ctrl-C (SIGINT).
    case interrupt = 1
    /// `resumectl pause`, SIGTERM or SIGHUP.
    case pause = 2
}

/// A flag that a transfer polls from libcurl's progress callback, and that ends its waits at once.
public final class Cancellation: Sendable {
    private let state = Atomic<Int>(0)
    /// Everything waiting right now: `stop` wakes each of them.
    private let waiters = Mutex<[ObjectIdentifier: Doorbell]>([:])

    public init() {}

    /// The first reason given wins; later calls change nothing.
    public func stop(_ reason: StopReason) {
        guard state.compareExchange(expected: 0, desired: reason.rawValue, ordering: .sequentiallyConsistent).exchanged else { return }
        for doorbell in waiters.withLock({ Array($0.values) }) { doorbell.ring() }
    }

    public var reason: StopReason? { StopReason(rawValue: state.load(ordering: .sequentiallyConsistent)) }
    public var isStopped: Bool { reason != nil }

    /// Sleeps up to `seconds`, returning early (false) when stopped.
    public func sleep(seconds: Double) -> Bool {
        Doorbell().wait(seconds: seconds, unless: self)
        return !isStopped
    }

    /// Lets `stop` ring `doorbell` while `body` runs.
    func ringing<T>(_ doorbell: Doorbell, during body: () -> T) -> T {
        let key = ObjectIdentifier(doorbell)
        waiters.withLock { $0[key] = doorbell }
        defer { waiters.withLock { $0[key] = nil } }
        return body()
    }
}

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
