import ResumeKit

/// `--on-upload-complete` with `--store s3://`: no folder holds a due hook, so the upload's record does
/// (``S3HookClaim``). The instance that finishes an upload (or finds it finished, its completer killed)
/// writes the claim with `finishing` and runs the hook at once; the claim goes once a run has ended.
/// A claim whose holder died (its `until` past) is taken over by whichever instance reads the record
/// next, the expiry sweep included, which keeps such a record until its hook has run: at least once,
/// twice only when a run outlasts its claim.
extension S3Backend {
    /// Runs the hook of a finished upload when it is this instance's to run, or its holder's time is up.
    func runHookIfDue(_ record: S3UploadRecord) {
        guard let hooks, record.upload.phase == .finishing, let claim = record.hook else { return }
        let now = WallClock.millis()
        guard claim.holder == instance || claim.until <= now else { return }
        // Every HEAD of a finished upload reads its record: one run at a time per upload in this process.
        guard hooksRunning.withLock({ $0.insert(record.id).inserted }) else { return }
        var claimed = record
        if claim.holder != instance {
            claimed.hook = S3HookClaim(holder: instance, until: now + hookWindow)
            do {
                try store.save(claimed)
            } catch {
                hooksRunning.withLock { _ = $0.remove(record.id) }
                return
            }
            log?(
                "completion hook of /\(record.upload.target.joined(separator: "/")) taken over from instance "
                    + "\(claim.holder)"
            )
        }
        let due = HookRunner.Due(
            id: record.id, path: "s3://\(store.client.bucket)/\(store.finalKey(record.upload))",
            size: record.upload.length ?? record.upload.offset, kind: record.upload.kind, user: record.upload.user)
        let store = store
        let instance = instance
        hooks.run(due) {
            // Cleared only while the claim is still this instance's: one taken over meanwhile is the other's to clear.
            if var now = try? store.record(due.id), now.hook?.holder == instance {
                now.hook = nil
                try? store.save(now)
            }
            self.hooksRunning.withLock { _ = $0.remove(due.id) }
        }
    }
}

/// A completion hook due for an upload kept on S3: `holder` (an instance id) runs it; another instance
/// may take it over once `until` (milliseconds since 1970) is past.
struct S3HookClaim: Codable, Sendable, Equatable {
    var holder: String
    var until: Int64
}
