import CCurl
import Dispatch
import Glibc
import Synchronization

/// libcurl's multi interface on a thread of its own. Sessions hand it an easy handle and wait; the
/// handle's callbacks then run on this thread while the session's thread sleeps, so nothing touches
/// a transfer's state from two threads at once. All handles share the multi handle's connection cache.
final class MultiDriver: @unchecked Sendable {
    /// Handed from a session thread to the driver thread; `onDone` runs on the driver thread.
    private struct Job: @unchecked Sendable {
        let handle: EasyHandle
        let onDone: (CURLcode, String) -> Void
    }

    private let multi: UnsafeMutableRawPointer
    private let queue = Mutex<(pending: [Job], stopping: Bool)>(([], false))
    /// Owned by the driver thread.
    private var running: [UnsafeMutableRawPointer: Job] = [:]
    private let finished = DispatchSemaphore(value: 0)
    /// Set once the loop runs: a start from an `onDone` needs no wake-up.
    private let loopThread = Atomic<UInt>(0)

    init() throws {
        _ = try EasyHandle()  // makes sure curl_global_init ran
        guard let multi = curl_multi_init() else { throw CurlError(CURLE_FAILED_INIT) }
        self.multi = multi
        // One TCP connection per transfer, also over HTTP/2: `--connections N` means N connections (a
        // server's per-connection limit is what they beat), not N streams multiplexed on one.
        _ = rctl_multi_setopt_long(multi, CURLMOPT_PIPELINING, Int(CURLPIPE_NOTHING))
        runOnBackgroundThread("curl-multi") { [self] in loop() }
    }

    /// Runs `handle`'s transfer on the multi handle and waits for its end.
    func run(_ handle: EasyHandle) -> (CURLcode, String) {
        let done = DispatchSemaphore(value: 0)
        var ended = (CURLE_OK, "")
        // The semaphore orders the driver thread's write before this thread's read.
        start(handle) { code, message in
            ended = (code, message)
            done.signal()
        }
        done.wait()
        return ended
    }

    /// Starts `handle`'s transfer without waiting for it; `onDone` runs on the driver thread at its end, once
    /// the handle is out of the multi handle (it may configure and start it again).
    func start(_ handle: EasyHandle, onDone: @escaping (CURLcode, String) -> Void) {
        handle.clearError()
        queue.withLock { $0.pending.append(Job(handle: handle, onDone: onDone)) }
        if loopThread.load(ordering: .relaxed) != UInt(pthread_self()) { curl_multi_wakeup(multi) }
    }

    /// Ends the thread once no transfer is left; waits for it.
    func shutdown() {
        queue.withLock { $0.stopping = true }
        curl_multi_wakeup(multi)
        finished.wait()
    }

    private func loop() {
        defer {
            curl_multi_cleanup(multi)
            finished.signal()
        }
        loopThread.store(UInt(pthread_self()), ordering: .relaxed)
        while true {
            let (pending, stopping) = queue.withLock { state in
                defer { state.pending.removeAll() }
                return (state.pending, state.stopping)
            }
            for job in pending {
                let added = curl_multi_add_handle(multi, job.handle.raw)
                if added == CURLM_OK {
                    running[job.handle.raw] = job
                } else {
                    job.onDone(CURLE_FAILED_INIT, String(cString: curl_multi_strerror(added)))
                }
            }
            if stopping && running.isEmpty { return }
            var active: Int32 = 0
            curl_multi_perform(multi, &active)
            var left: Int32 = 0
            while let message = curl_multi_info_read(multi, &left) {
                guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle,
                    let job = running.removeValue(forKey: easy)
                else { continue }
                let code = message.pointee.data.result
                curl_multi_remove_handle(multi, easy)
                job.onDone(code, job.handle.errorMessage)
            }
            // What an `onDone` started goes in at once, without a wait in poll.
            if queue.withLock({ !$0.pending.isEmpty }) { continue }
            curl_multi_poll(multi, nil, 0, 1000, nil)
        }
    }
}
