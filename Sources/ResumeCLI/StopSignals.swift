import Dispatch
import Glibc
import ResumeKit
import Synchronization

/// SIGINT, SIGTERM and SIGHUP stop the transfer that runs. The handler only writes the signal's number to
/// a pipe (async-signal-safe); a thread reads it and stops the transfer. Installing a handler replaces the
/// default in one step: with `SIG_IGN` first and a dispatch source after, a signal that came in between
/// (a `cancel` right after `--detach`, on a busy machine) was dropped, and the process never stopped.
enum StopSignals {
    private nonisolated(unsafe) static var writeEnd: Int32 = -1
    private static let current = Mutex<Cancellation?>(nil)
    private static let installed: Void = {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        _ = fcntl(ends[1], F_SETFL, O_NONBLOCK)  // a handler must never block: a full pipe has said enough
        writeEnd = ends[1]
        let readEnd = ends[0]
        DispatchQueue(label: "resumectl.signals").async {
            var signo: UInt8 = 0
            while true {
                let n = uninterrupted { read(readEnd, &signo, 1) }
                guard n == 1 else { return }
                let reason: StopReason = Int32(signo) == SIGINT ? .interrupt : .pause
                current.withLock { $0 }?.stop(reason)
            }
        }
        for sig in [SIGINT, SIGTERM, SIGHUP] {
            signal(sig) { sig in
                var byte = UInt8(truncatingIfNeeded: sig)
                _ = write(StopSignals.writeEnd, &byte, 1)
            }
        }
    }()

    /// From now on these signals stop `cancellation`.
    static func route(to cancellation: Cancellation) {
        current.withLock { $0 = cancellation }
        _ = installed
    }
}
