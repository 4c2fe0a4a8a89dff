import CCurl
import Dispatch
import Synchronization

/// libcurl's multi interface on a thread of its own. Sessions hand it an easy handle and wait; the
/// handle's callbacks then run on this thread while the session's thread sleeps, so nothing touches
/// a transfer's state from two threads at once. All handles share the multi handle's connection cache.
final class MultiDriver: @unchecked Sendable {
    /// Handed from a session thread to the driver thread and back; the semaphore orders the accesses.
    private final class Job: @unchecked Sendable {
        let handle: EasyHandle
        let done = DispatchSemaphore(value: 0)
        var code = CURLE_OK
        var message = ""
        init(handle: EasyHandle) { self.handle = handle }
    }

    private let multi: UnsafeMutableRawPointer
    private let queue = Mutex<(pending: [Job], stopping: Bool)>(([], false))
    /// Owned by the driver thread.
    private var running: [UnsafeMutableRawPointer: Job] = [:]
    private let finished = DispatchSemaphore(value: 0)

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
        let job = Job(handle: handle)
        handle.clearError()
        queue.withLock { $0.pending.append(job) }
        curl_multi_wakeup(multi)
        job.done.wait()
        return (job.code, job.message)
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
                    job.code = CURLE_FAILED_INIT
                    job.message = String(cString: curl_multi_strerror(added))
                    job.done.signal()
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
                job.code = message.pointee.data.result
                job.message = job.handle.errorMessage
                curl_multi_remove_handle(multi, easy)
                job.done.signal()
            }
            curl_multi_poll(multi, nil, 0, 1000, nil)
        }
    }
}
