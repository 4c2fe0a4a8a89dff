import Dispatch
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// SIGINT and SIGTERM, caught from the moment it is made: made before `listening on` is printed,
/// so that a signal sent as soon as that line is read is never lost (it would be, between ignoring
/// the signal and watching for it).
///
/// The first one starts the graceful stop (``wait()`` returns); a second one, of either kind, ends the
/// process at once with 128 + its number, for an operator who will not wait for the drain. Nothing
/// acknowledged is lost then either: an offset is durable before any answer reports it.
final class TerminationSignal: @unchecked Sendable {
    private let state = Mutex<(fired: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))
    private var sources: [any DispatchSourceSignal] = []

    init() {
        for number in [SIGINT, SIGTERM] {
            // Ignored at the process level so that only the dispatch source sees it.
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [weak self] in self?.fire(number) }
            source.resume()
            sources.append(source)
        }
    }

    private func fire(_ number: Int32) {
        let (again, waiter) = state.withLock { state in
            defer { state = (true, nil) }
            return (state.fired, state.waiter)
        }
        if again {
            Standard.error("resumectl: a second \(number == SIGINT ? "SIGINT" : "SIGTERM"): stopping at once")
            _exit(128 + number)
        }
        waiter?.resume()
    }

    /// Returns once a signal has arrived (at once if one already has).
    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let fired = state.withLock { state in
                if state.fired { return true }
                state.waiter = continuation
                return false
            }
            if fired { continuation.resume() }
        }
    }
}
