import Synchronization

/// One tus upload the server holds: where its bytes go and how many it has.
struct TusUpload: Sendable {
    var file: UploadFile
    var length: Int64
    var offset: Int64
    var expires: ContinuousClock.Instant
    /// Wall-clock expiry, for `Upload-Expires`.
    var expiresEpoch: Int64
    /// A PATCH is writing: another one gets 409 (tus has no 423 in its core).
    var busy = false
}

/// The tus uploads in progress, by id. In memory only, as NIO keeps the draft's: a restart forgets
/// them (their temporary files are swept at the next start) and clients start over on the 404.
final class TusUploads: Sendable {
    private let uploads = Mutex<[String: TusUpload]>([:])

    /// Where upload URLs live; below it every path is an upload id.
    static let prefix = "/tus_upload/"

    func insert(_ upload: TusUpload) -> String {
        var random = SystemRandomNumberGenerator()
        let id = String(random.next() as UInt64, radix: 16) + String(random.next() as UInt64, radix: 16)
        uploads.withLock { $0[id] = upload }
        return id
    }

    func get(_ id: String, now: ContinuousClock.Instant = .now) -> TusUpload? {
        uploads.withLock { uploads in
            guard let upload = uploads[id], now < upload.expires || upload.busy else { return nil }
            return upload
        }
    }

    /// Marks `id` busy for a PATCH at `offset`: `nil` when unknown, expired, busy, or at another offset
    /// (the stored offset is returned through `current`).
    func beginAppend(_ id: String, at offset: Int64, now: ContinuousClock.Instant = .now) -> (TusUpload?, current: Int64?) {
        uploads.withLock { uploads in
            guard var upload = uploads[id], now < upload.expires else { return (nil, nil) }
            guard !upload.busy, upload.offset == offset else { return (nil, upload.offset) }
            upload.busy = true
            uploads[id] = upload
            return (upload, upload.offset)
        }
    }

    /// Ends a PATCH: the new offset, and a later expiry (expiration counts from the last activity).
    func endAppend(_ id: String, offset: Int64, expires: ContinuousClock.Instant, expiresEpoch: Int64) {
        uploads.withLock { uploads in
            guard var upload = uploads[id] else { return }
            upload.busy = false
            upload.offset = offset
            upload.expires = expires
            upload.expiresEpoch = expiresEpoch
            uploads[id] = upload
        }
    }

    @discardableResult
    func remove(_ id: String) -> TusUpload? {
        uploads.withLock { $0.removeValue(forKey: id) }
    }

    /// Takes the uploads whose time ran out and that no PATCH is writing, for their files to be deleted.
    func takeExpired(now: ContinuousClock.Instant = .now) -> [TusUpload] {
        uploads.withLock { uploads in
            let expired = uploads.filter { !$0.value.busy && $0.value.expires <= now }
            for id in expired.keys { uploads[id] = nil }
            return Array(expired.values)
        }
    }
}
