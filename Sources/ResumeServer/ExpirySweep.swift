import NIOCore
import NIOPosix

/// Drops the uploads whose `--upload-timeout` ran out, on a timer (also those found at start).
enum ExpirySweep {
    static func schedule(
        on loop: any EventLoop, table: UploadTable, store: any UploadBackend, threadPool: NIOThreadPool, expiry: Int64,
        log: (@Sendable (String) -> Void)?
    ) {
        let every = TimeAmount.milliseconds(min(max(expiry / 2, 50), 30_000))
        let s3 = store as? S3Backend
        loop.scheduleRepeatedTask(initialDelay: every, delay: every) { _ in
            let now = WallClock.millis()
            let expired = table.takeExpired(now: now)
            if let s3 {
                // What S3 holds is the truth: any instance aborts an expired upload nobody is writing.
                threadPool.submit { _ in
                    for target in s3.sweepExpired(now: now) {
                        log?("upload \(target) expired, its multipart upload aborted")
                    }
                    // The sweep's own requests keep one session warm; the rest of a burst's go after a sweep without
                    // use.
                    s3.store.client.closeIdleSessions(unusedFor: .nanoseconds(every.nanoseconds))
                }
                return
            }
            guard !expired.isEmpty else { return }
            threadPool.submit { _ in
                for entry in expired {
                    store.remove(entry.record.id)
                    if !entry.finished {
                        log?(
                            "upload /\(entry.record.target.joined(separator: "/")) expired after "
                                + "\(entry.record.offset) bytes"
                        )
                    }
                }
            }
        }
    }
}
