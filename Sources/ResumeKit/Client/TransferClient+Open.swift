/// What a command asks to open.
enum Subject {
    /// A download to a file, or to stdout (`-o -`: no id, lock or token); `list`: one file of a list.
    case download(DownloadRequest, list: ListFile? = nil)
    /// An upload of a file, or of stdin (`-`). `batchFile`: a folder batch's small file, whose token stays in
    /// memory (no lock, nothing on disk).
    case upload(UploadRequest, batchFile: Bool = false)
    /// A token on disk, to continue with the headers (and, for a download, the URL) given now.
    case resume(ResumeToken, headers: [String], newURL: String?)
    /// A token on disk, to forget.
    case cancel(ResumeToken)
}

/// A list's file, whose state folder the list made ready and which takes its lock with its token (see
/// TokenGuard).
enum ListFile {
    /// Run by one of the list's workers.
    case worker
    /// In the list's first pass (SmallFilePass): only a fresh file opens, with no lock and no look-up in the
    /// state folder; `tokens` are the ids on disk when the pass began.
    case firstPass(tokens: Set<String>)
}

/// A transfer ready to run: its token (on disk, or new and not yet written) and what its opening found.
struct Opened {
    var token: ResumeToken
    let lock: TokenGuard
    let isNew: Bool
    /// The connection settings of the token and of this run, credentials for the token's origin only, S3's
    /// signing for a download of an object.
    let options: TransferOptions
    /// An upload's source file; nil for stdin, a download, a cancel.
    let source: SourceFile?
}

/// What the opening of a transfer found.
enum Opening {
    case opened(Opened)
    /// A download's output is there already and nothing asked to replace it.
    case fileThere(String)
    /// In a list's first pass: a file with a token or anything at its path, which the workers open again.
    case notFresh
}

extension TransferClient {
    /// The one opening of every transfer: its route (an s3:// object becomes its signed HTTPS address), the checks
    /// of its URL, headers, output or source, the state folder, its id, lock and token, what the token keeps, and
    /// the options its requests go with. The caller releases the lock.
    func open(_ subject: Subject, events: EventHandler = { _ in }) throws(TransferError) -> Opening {
        switch subject {
        case .download(let request, let list):
            return try openDownload(request, list: list, events: events)
        case .upload(let request, let batchFile):
            return .opened(try openUpload(request, batchFile: batchFile, events: events))
        case .resume(let stored, let headers, let newURL):
            return .opened(try openToken(stored, headers: headers, newURL: newURL, resuming: true, events: events))
        case .cancel(let stored):
            return .opened(try openToken(stored, headers: [], newURL: nil, resuming: false, events: { _ in }))
        }
    }

    /// The token id a download request uses, or nil when its URL or output path is unusable.
    public func downloadTokenID(_ request: DownloadRequest) -> String? {
        try? downloadIdentity(request).id
    }

    /// The token id an upload request uses.
    public func uploadTokenID(_ request: UploadRequest) -> String {
        TokenStore.makeID(
            kind: .upload, url: request.url, path: request.filePath == "-" ? "-" : OutputPath.absolute(request.filePath)
        )
    }

    /// A download's route resolved: the plain (for S3: signed-to-be) request, the S3 object's state, the output path,
    /// the id.
    private func downloadIdentity(_ request: DownloadRequest) throws(TransferError) -> (
        request: DownloadRequest, s3: ResumeToken.S3State?, path: String, id: String
    ) {
        var request = request
        var s3: ResumeToken.S3State?
        if Route.isS3(request.url) { (request, s3) = try s3Object(request) }
        try URLCheck.validate(request.url)
        for mirror in request.mirrors { try URLCheck.validate(mirror) }
        if !request.mirrors.isEmpty, request.expectedSHA256 == nil, request.pieces == nil {
            throw TransferError(
                .usage,
                "bytes from several mirrors are joined only when a checksum vouches for them: give --checksum, "
                    + "--checksum-file or a Metalink with hashes")
        }
        if request.outputPath == "-" { return (request, s3, "-", "") }
        let path = OutputPath.resolve(url: request.url, output: request.outputPath)
        return (request, s3, path, TokenStore.makeID(kind: .download, url: request.url, path: path))
    }

    private func openDownload(_ request: DownloadRequest, list: ListFile?, events: EventHandler)
        throws(TransferError) -> Opening
    {
        let (plain, s3, path, id) = try downloadIdentity(request)
        _ = try HeaderLines.parse(request.headers)
        let lock = TokenGuard(store: store, id: id)
        func opened(_ token: ResumeToken, isNew: Bool) throws(TransferError) -> Opening {
            var token = token
            let options = try signingS3(
                connectionOptions(for: &token, given: request.headers, events: events), for: token)
            return .opened(Opened(token: token, lock: lock, isNew: isNew, options: options, source: nil))
        }
        if path == "-" { return try opened(ResumeToken(download: plain, id: id, path: path, s3: s3), isNew: true) }
        if list == nil { try prepareStateDirectory() }
        do {
            // A list's file without a token skips the lock and a second look (a path lookup each, per file).
            let known: Bool
            switch list {
            case nil: known = true
            case .worker?: known = store.exists(id: id)
            case .firstPass(let tokens)?:
                // A token written meanwhile by another process has its `.part` there: the pass's create fails.
                guard !tokens.contains(id), OutputPath.occupant(path) == .nothing else { return .notFresh }
                return try opened(ResumeToken(download: plain, id: id, path: path, s3: s3), isNew: true)
            }
            if known { try lock.hold() }
            if known, let existing = try lock.existing(.download, "a download") {
                var part = try existing.downloadPart()
                if let sum = request.expectedSHA256 { part.expectedSHA256 = sum.lowercased() }
                return try opened(existing.with(.download(part)), isNew: false)
            }
            let occupant = OutputPath.occupant(path)
            if occupant == .file, !request.force {
                lock.release()
                return .fileThere(path)
            }
            try OutputPath.checkWritable(path, occupant: occupant)
            return try opened(ResumeToken(download: plain, id: id, path: path, s3: s3), isNew: true)
        } catch {
            lock.release()
            throw error
        }
    }

    /// An upload's checks, source, lock and token: the one on disk (an upload of the same kind and, for a file,
    /// of the same file), else a new one whose protocol is left open unless pinned (see `runUpload`).
    private func openUpload(_ request: UploadRequest, batchFile: Bool, events: EventHandler) throws(TransferError)
        -> Opened
    {
        let s3 = Route.isS3(request.url)
        let stream = request.filePath == "-"
        if s3 {
            _ = try requireS3Answers()
            _ = try S3Location.parse(request.url)
        } else {
            try URLCheck.validate(request.url)
        }
        _ = try HeaderLines.parse(request.headers)
        if let chunk = request.chunkSize, chunk <= 0 { throw TransferError(.usage, "--chunk-size must be positive") }
        if stream {
            if case .s3Prefix = try Route(request.url) {
                throw TransferError(.usage, "\(request.url) names no object: give s3://BUCKET/KEY")
            }
            if let max = request.spoolMax, max < 1 << 20 {
                throw TransferError(.usage, "--spool-max must be at least 1M")
            }
        }
        // A folder batch's files run side by side in the folder the batch made ready: sweeping it again here
        // would take the temporary files of the others' token writes.
        if request.batch == nil { try prepareStateDirectory() }
        let source = stream ? nil : try SourceFile(path: request.filePath)
        let identity =
            source?.identity ?? ResumeToken.SourceIdentity(path: "-", size: 0, mtime: 0, inode: 0, edgeHash: "")
        let lock = TokenGuard(store: store, id: uploadTokenID(request))
        do {
            if !batchFile { try lock.hold() }
            let what = stream ? "a stream upload" : s3 ? "an S3 upload" : "an upload"
            var token: ResumeToken
            let existing =
                try batchFile
                ? nil
                : lock.existing(.upload, what, has: { stream ? $0.upload?.stream != nil : !s3 || $0.upload?.s3 != nil })
            if let existing {
                var part = try existing.uploadPart()
                if let source { try checkSource(part, source, id: lock.id) }
                part.updateS3 { $0.parallel = request.s3.parallel }  // the command given again says it again
                token = existing.with(.upload(part))
            } else if s3 {
                token = try newS3UploadToken(request, id: lock.id, source: identity, events: events)
            } else {
                token = ResumeToken(
                    upload: request, id: lock.id, part: .init(source: identity, wire: request.pinnedWire ?? .undecided))
            }
            let options = connectionOptions(for: &token, given: request.headers, events: events)
            return Opened(token: token, lock: lock, isNew: existing == nil, options: options, source: source)
        } catch {
            lock.release()
            throw error
        }
    }

    /// A token named by `resume` or `cancel`, read again under its lock (another process may have moved it on);
    /// for a resume, a replacement URL checked and an upload's source file found unchanged.
    private func openToken(
        _ stored: ResumeToken, headers: [String], newURL: String?, resuming: Bool, events: EventHandler
    ) throws(TransferError) -> Opened {
        if let newURL {
            guard stored.kind == .download else {
                throw TransferError(.usage, "--url applies to downloads; an upload resumes at the server's upload URL")
            }
            try URLCheck.validate(newURL)
        }
        let lock = TokenGuard(store: store, id: stored.id)
        do {
            try lock.hold()
            var token = try loadToken(stored.id)
            // Swept on a resume only: a cancel may run inside a folder batch, whose other files write tokens meanwhile.
            if resuming {
                for name in store.removeLeftovers() {
                    events(.note("removed \(name), left by an interrupted token write"))
                }
            }
            var source: SourceFile?
            if resuming, let part = token.upload, part.stream == nil {
                source = try SourceFile(path: part.source.path)
                try checkSource(part, source!, id: token.id)
            }
            if let newURL { token.url = newURL }
            var options = connectionOptions(for: &token, given: headers, events: events)
            if token.kind == .download { options = try signingS3(options, for: token) }
            return Opened(token: token, lock: lock, isNew: false, options: options, source: source)
        } catch {
            lock.release()
            throw error
        }
    }

    /// The options one transfer runs with: the connection settings stored in its token, overridden by the
    /// ones given now, which the token then keeps (without secrets). Credentials go only to the token's URL.
    /// - Parameter given: `-H` lines of this run, which override the token's by name.
    private func connectionOptions(for token: inout ResumeToken, given: [String] = [], events: EventHandler)
        -> TransferOptions
    {
        // Credential headers are kept by name only (see Redact): one line says which to give again.
        let missing = token.missingHeaders(given: given, login: options.transport.credentials.authenticates)
        if !missing.isEmpty { events(.warning(.withheldHeaders(missing))) }
        token.headers = HeaderLines.merge(stored: token.headers, given: given)
        let merged = (token.connection ?? ConnectionSettings()).overridden(by: options.transport.connection)
        token.connection = merged.storable.isEmpty ? nil : merged.storable
        var effective = options
        effective.transport.connection = merged
        effective.transport.credentialOrigin = token.url
        if merged.insecure == true { events(.warning(.insecure)) }
        return effective
    }

    func checkSource(_ part: ResumeToken.UploadPart, _ source: SourceFile, id: String) throws(TransferError) {
        let was = part.source
        let now = source.identity
        guard was.size == now.size, was.mtime == now.mtime, was.inode == now.inode, was.edgeHash == now.edgeHash else {
            throw TransferError(
                .sourceChanged,
                "\(was.path) changed since the upload began; nothing was sent (cancel \(id) to start over)",
                tokenID: nil)
        }
    }

    /// A folder batch's own lock, on its id (its files open as uploads).
    func openBatch(_ id: String) throws(TransferError) -> TokenGuard {
        try prepareStateDirectory()
        let lock = TokenGuard(store: store, id: id)
        try lock.hold()
        return lock
    }

    /// Fails at once when tokens cannot be written, rather than at a download's first checkpoint.
    func prepareStateDirectory() throws(TransferError) {
        do { try store.ensureDirectory() } catch { throw TransferError(.localIO, "\(error)") }
        _ = store.removeLeftovers()
        results.pruneOnce()
    }

    /// Runs `body` with the one session pool (a libcurl multi handle on one thread, one connection cache) for many
    /// exchanges at once: segments, S3's parts, a list's downloads. A pool already (a batch's), or another
    /// transport (a test's), is used as it is.
    func withSessionPool<T, E: Error>(_ wanted: Bool = true, _ body: (any HTTPTransport) throws(E) -> T) throws(E) -> T
    {
        let pool = wanted && (transport as? CurlTransport)?.isMulti == false ? try? CurlTransport.multi() : nil
        defer { pool?.shutdown() }
        return try body(pool ?? transport)
    }

    /// ``withSessionPool(_:_:)`` for work that waits on tasks, with `lanes` pools (each its own thread and
    /// connection cache) where one network thread would be the bottleneck: a list of small files.
    func withSessionPool<T>(lanes: Int = 1, _ body: ([any HTTPTransport]) async -> T) async -> T {
        let pools = transport is CurlTransport ? (0..<max(1, lanes)).compactMap { _ in try? CurlTransport.multi() } : []
        defer { for pool in pools { pool.shutdown() } }
        return await body(pools.isEmpty ? [transport] : pools)
    }

    /// A 401 says what to do: credentials are never stored, so a resume needs them again.
    func explainingLogin(_ error: TransferError) -> TransferError {
        guard error.code == .failed, error.status == 401 else { return error }
        var explained = error
        explained.message +=
            options.transport.credentials.authenticates
            ? "; the login was refused"
            : "; the server wants a login: pass -u USER[:PASSWORD] or --netrc (credentials are never kept in the token)"
        return explained
    }
}
