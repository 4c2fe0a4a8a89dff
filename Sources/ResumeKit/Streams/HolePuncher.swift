import Dispatch

/// Gives a spool's acknowledged bytes back to the disk on a queue of its own, in the order asked. Where the
/// file system is mounted with `discard`, a punched hole waits for its TRIM (0.8 s a GiB on the build
/// machine); the sender waited for it before its next append, and the reader and syncer behind the spool's
/// lock with it.
final class HolePuncher: Sendable {
    private let queue = DispatchQueue(label: "resumectl.spool-release")

    /// Punches `[from, to)` of `fd` later, then calls `done` with the result (on the queue).
    func punch(fd: Int32, path: String, from: Int64, to: Int64, done: @escaping @Sendable (TransferError?) -> Void) {
        queue.async {
            do throws(TransferError) {
                try Spool.punch(fd: fd, path: path, from: from, to: to)
                done(nil)
            } catch {
                done(error)
            }
        }
    }

    /// Returns once every punch asked for so far is done: before the spool's descriptor is closed.
    func drain() { queue.sync {} }
}
