import Synchronization

/// A flag that a transfer polls from libcurl's progress callback, and that ends its waits at once.
public final class Cancellation: Sendable {
    private let state = Atomic<Int>(0)
    /// Everything waiting right now: `stop` wakes each of them.
    private let waiters = Mutex<[ObjectIdentifier: Doorbell]>([:])

    public init() {}

    /// The first reason given wins; later calls change nothing.
    public func stop(_ reason: StopReason) {
        guard state.compareExchange(expected: 0, desired: reason.rawValue, ordering: .sequentiallyConsistent).exchanged
        else { return }
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
