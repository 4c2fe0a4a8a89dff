extension TransferClient {
    /// The one opening of a download, for `download` and `prepare` alike: its route (an s3:// URL becomes
    /// the signed HTTPS address of its object), the checks of its URL, headers and output path, its id,
    /// its lock and its token. The caller releases the lock.
    /// - Parameter holdLock: take the lock now even when no token exists yet (a list's file takes it later).
    func openDownload(_ request: DownloadRequest, holdLock: Bool = true) throws(TransferError) -> (Opening, TokenGuard) {
        var request = request
        var s3: ResumeToken.S3State?
        if Route.isS3(request.url) { (request, s3) = try s3Object(request) }
        try URLCheck.validate(request.url)
        _ = try HeaderLines.parse(request.headers)
        let path = try OutputPath.resolve(url: request.url, output: request.outputPath)
        let lock = TokenGuard(store: store, id: TokenStore.makeID(kind: .download, url: request.url, path: path))
        do {
            // A list's file without a token skips the lock and a second look (a path lookup each, per file).
            if store.exists(id: lock.id) || holdLock {
                try lock.hold()
                if let existing = try lock.existing(.download, "a download") { return (.token(existing, isNew: false), lock) }
            }
            let occupant = OutputPath.occupant(path)
            if occupant == .file, !request.force { return (.fileThere(path), lock) }
            try OutputPath.checkWritable(path, occupant: occupant)
            return (.token(ResumeToken(download: request, id: lock.id, path: path, s3: s3), isNew: true), lock)
        } catch {
            lock.release()
            throw error
        }
    }

    /// The one opening of an upload, for `upload` (of a file, or of stdin: `-`) and `prepare` alike: the checks
    /// of its URL (or S3 address), headers and chunk size, its source (nil for stdin), its id, its lock and the
    /// token on disk, which must be an upload of the same kind (a stream's, an S3 one) and, for a file, still
    /// of the same file. The caller makes a new token when there is none, and releases the lock.
    func openUpload(_ request: UploadRequest) throws(TransferError) -> (SourceFile?, ResumeToken?, TokenGuard) {
        if Route.isS3(request.url) {
            _ = try S3Location.parse(request.url)
        } else {
            try URLCheck.validate(request.url)
        }
        _ = try HeaderLines.parse(request.headers)
        if let chunk = request.chunkSize, chunk <= 0 { throw TransferError(.usage, "--chunk-size must be positive") }
        let stream = request.filePath == "-"
        let source = stream ? nil : try SourceFile(path: request.filePath)
        let lock = try takeLock(uploadTokenID(request))
        do {
            let s3 = Route.isS3(request.url)
            let what = stream ? "a stream upload" : s3 ? "an S3 upload" : "an upload"
            guard let existing = try lock.existing(.upload, what, has: { stream ? $0.upload?.stream != nil : !s3 || $0.upload?.s3 != nil })
            else { return (source, nil, lock) }
            if let source { try checkSource(try existing.uploadPart(), source, id: lock.id) }
            return (source, existing, lock)
        } catch {
            lock.release()
            throw error
        }
    }

    /// The one opening of a `resume`, for either direction: the token's lock, the token read again under it
    /// (another process may have moved it on since it was named), and the leftovers of an interrupted token
    /// write swept. The caller releases the lock.
    func openResume(_ stored: ResumeToken, events: EventHandler) throws(TransferError) -> (ResumeToken, TokenGuard) {
        let lock = try takeLock(stored.id)
        do {
            let token = try loadToken(stored.id)
            for name in store.removeLeftovers() { events(.note("removed \(name), left by an interrupted token write")) }
            return (token, lock)
        } catch {
            lock.release()
            throw error
        }
    }
}
