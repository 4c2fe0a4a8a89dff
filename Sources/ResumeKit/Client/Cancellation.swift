import FoundationEssentials
import Glibc
import Synchronization

/// Why a transfer was asked to stop.
public enum StopReason: Int, Sendable {
    /// Ctrl-C (SIGINT).
    case interrupt = 1
    /// `resumectl pause`, SIGTERM or SIGHUP.
    case pause = 2
}

/// A flag that a transfer polls from libcurl's progress callback and its backoff sleeps.
public final class Cancellation: Sendable {
    private let state = Atomic<Int>(0)

    public init() {}

    /// The first reason given wins; later calls change nothing.
    public func stop(_ reason: StopReason) {
        _ = state.compareExchange(expected: 0, desired: reason.rawValue, ordering: .sequentiallyConsistent)
    }

    public var reason: StopReason? { StopReason(rawValue: state.load(ordering: .sequentiallyConsistent)) }
    public var isStopped: Bool { reason != nil }

    /// Sleeps up to `seconds`, returning early (false) when stopped.
    public func sleep(seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if isStopped { return false }
            usleep(UInt32(min(0.05, max(0, deadline.timeIntervalSinceNow)) * 1_000_000))
        }
        return !isStopped
    }
}
