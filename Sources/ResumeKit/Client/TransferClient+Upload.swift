import FoundationEssentials

extension TransferClient {
    /// Uploads a file with the IETF draft, tus or a plain request, continuing this file's earlier attempt to the same URL.
    public func upload(
        _ request: UploadRequest, cancellation: Cancellation = Cancellation(), events: @escaping EventHandler = { _ in }
    ) async throws(TransferError) -> UploadResult {
        try await onOwnThread { () throws(TransferError) in
            try self.recorded(id: self.uploadTokenID(request), kind: .upload, url: request.url, source: request.filePath, { () throws(TransferError) in
                try self.runUpload(request, cancellation: cancellation, events: events)
            }, as: TransferResult.uploaded)
        }
    }

    /// The token id an upload request uses.
    public func uploadTokenID(_ request: UploadRequest) -> String {
        if request.filePath == "-" { return TokenStore.makeID(kind: .upload, url: request.url, path: "-") }
        return TokenStore.makeID(kind: .upload, url: request.url, path: OutputPath.absolute(request.filePath))
    }

    /// Uploads a file (to a URL or `s3://BUCKET/KEY`) or a stream, continuing this request's earlier attempt.
    func runUpload(_ request: UploadRequest, cancellation: Cancellation, events: @escaping EventHandler) throws(TransferError) -> UploadResult {
        if Route.isS3(request.url) { _ = try requireS3Answers() }
        if request.filePath == "-" { try checkStream(request) }
        let (opened, existing, lock) = try openUpload(request)
        defer { lock.release() }
        guard let source = opened else {
            return try runStreamUpload(request, existing: existing, id: lock.id, cancellation: cancellation, events: events)
        }
        var token: ResumeToken
        var probe = request.probed
        if let existing {
            var part = try existing.uploadPart()
            // A token written by `--detach` before anything was sent has no protocol yet: choose it now.
            if part.wire == .undecided {
                part.wire = try chooseProtocol(request, probe: &probe, cancellation: cancellation, events: events)
            }
            part.updateS3 { $0.parallel = request.s3.parallel }  // the command given again says it again
            token = existing.with(.upload(part))
        } else {
            token = try newUploadToken(request, id: lock.id, source: source.identity, probe: &probe, cancellation: cancellation, events: events)
        }
        let options = connectionOptions(for: &token, given: request.headers, events: events)
        try store.write(token)
        return try runUploadOperation(
            token, source: source, options: options, versionPinned: request.interopVersion != nil, chunkSize: request.chunkSize,
            capabilities: try tusCapabilities(probe, size: source.identity.size, id: lock.id), cancellation: cancellation, events: events)
    }

    /// A new upload's token, not yet written: an S3 one (``newS3UploadToken(_:id:source:events:)``), else one
    /// with the protocol ``chooseProtocol(_:probe:cancellation:events:)`` finds (`probe` keeps its answer).
    func newUploadToken(
        _ request: UploadRequest, id: String, source: ResumeToken.SourceIdentity, probe: inout ProtocolProbe?, cancellation: Cancellation,
        events: @escaping EventHandler
    ) throws(TransferError) -> ResumeToken {
        if Route.isS3(request.url) { return try newS3UploadToken(request, id: id, source: source, events: events) }
        let wire = try chooseProtocol(request, probe: &probe, cancellation: cancellation, events: events)
        return ResumeToken(upload: request, id: id, part: .init(source: source, wire: wire))
    }

    /// The protocol of a new upload: the one pinned, else what one OPTIONS probe finds (`probe` keeps its answer).
    func chooseProtocol(
        _ request: UploadRequest, probe: inout ProtocolProbe?, cancellation: Cancellation, events: @escaping EventHandler
    ) throws(TransferError) -> ResumeToken.UploadPart.Wire {
        if let pinned = request.pinnedWire { return pinned }
        let found: ProtocolProbe
        if let known = request.probed { found = known } else {
            found = try self.probe(request.url, headers: request.headers, cancellation: cancellation, events: events)
        }
        probe = found
        switch found {
        case .tus: return .tus(expires: nil, checksum: nil)
        case .ietf(let named): return .ietf(named ?? request.interopVersion ?? .newest)
        case .unknown: return .ietf(request.interopVersion ?? .newest)
        }
    }

    /// What a tus server's OPTIONS said (nil: not asked, or no tus); throws when it cannot take `size` bytes.
    func tusCapabilities(_ probe: ProtocolProbe?, size: Int64, id: String) throws(TransferError) -> TusCapabilities? {
        guard case .tus(let found) = probe else { return nil }
        if let refusal = TusStateMachine.refusal(found, size: size) {
            store.remove(id: id)
            throw TransferError(.failed, refusal)
        }
        return found
    }

    /// Picks the token's protocol machine and runs it; not `durable` (a batch's small file), the token is never written.
    /// A refusal nothing can continue takes the token with it; a 401 says what to do (``explainingLogin(_:)``).
    func runUploadOperation(
        _ token: ResumeToken, source: SourceFile, options: TransferOptions, versionPinned: Bool, chunkSize: Int64?,
        capabilities: TusCapabilities?, durable: Bool = true, session: (any TransportSession)? = nil, cancellation: Cancellation,
        events: @escaping EventHandler
    ) throws(TransferError) -> UploadResult {
        let (machine, options) = try uploadMachine(
            token, versionPinned: versionPinned, chunkSize: chunkSize, capabilities: capabilities, options: options)
        func run<M: UploadMachine>(_ machine: M) throws(TransferError) -> UploadResult {
            // S3's parts go several at once through the session pool (a batch's own, when it runs in one).
            try withSessionPool(machine is S3MultipartMachine) { transport throws(TransferError) in
                try UploadOperation(
                    token: token, source: source, machine: machine, store: store, transport: transport, options: options,
                    cancellation: cancellation, events: events, session: session, durable: durable, budget: requestBudget
                ).runToEnd()
            }
        }
        do {
            return try run(machine)
        } catch {
            // Nothing can continue an upload refused for good (on S3: before an upload id): its token would only clutter `list`.
            if durable, error.tokenID == nil { store.remove(id: token.id) }
            throw explainingLogin(error)
        }
    }

    /// One OPTIONS to the creation URL, never with the body: which protocol does the server speak? A busy
    /// server (429, 503) or a lost connection is asked again under the transfer's retry rules, so that a
    /// tus server that was briefly busy is not taken for one that speaks no tus.
    private func probe(_ url: String, headers given: [String], cancellation: Cancellation, events: @escaping EventHandler)
        throws(TransferError) -> ProtocolProbe
    {
        var headers = (try? HeaderLines.parse(given)) ?? [:]
        for field in ProtocolProbe.requestHeaders.fields { headers.set(field.name, field.value) }
        let session = transport.makeSession()
        return try Retrier.run(options, cancellation: cancellation, events: events, fresh: { true }, stopped: "stopped before the upload began") { () throws(TransferError) in
            let collector = HeadCollector()
            let result = session.perform(
                TransferRequest(method: "OPTIONS", url: url, headers: headers), settings: options.transport,
                cancellation: cancellation, delegate: collector)
            if let fault = Fault.of(result.outcome, stallSeconds: options.transport.stallTimeout) { return .failed(fault) }
            guard result.outcome == .completed else {
                throw TransferError(.stopped(cancellation.reason ?? .interrupt), "stopped before the upload began")
            }
            guard let head = collector.head else { return .done(.unknown) }
            guard RetryPolicy.isBusy(status: head.status) else { return .done(ProtocolProbe.decide(head)) }
            return .failed(.answered(head.status, retryAfter: head.headers["Retry-After"], "the server answered \(head.status) to OPTIONS"))
        }
    }

    func runResumeUpload(
        _ stored: ResumeToken, newURL: String?, headers: [String], cancellation: Cancellation, events: @escaping EventHandler
    ) throws(TransferError) -> UploadResult {
        _ = try stored.uploadPart()
        if newURL != nil { throw TransferError(.usage, "--url applies to downloads; an upload resumes at the server's upload URL") }
        let (opened, lock) = try openResume(stored, events: events)
        defer { lock.release() }
        var token = opened
        let part = try token.uploadPart()
        if token.upload?.stream != nil { return try continueStream(token, headers: headers, cancellation: cancellation, events: events) }
        let source = try SourceFile(path: part.source.path)
        try checkSource(part, source, id: token.id)
        let options = connectionOptions(for: &token, given: headers, events: events)
        if part.uploadURL == nil, part.uploadProtocol != .s3 {
            events(.note(part.resumable ? "the server never confirmed the upload; sending the whole file"
                : "the server cannot resume uploads; sending the whole file again"))
        }
        return try runUploadOperation(
            token, source: source, options: options, versionPinned: false, chunkSize: nil, capabilities: nil,
            cancellation: cancellation, events: events)
    }

    func checkSource(_ part: ResumeToken.UploadPart, _ source: SourceFile, id: String) throws(TransferError) {
        let was = part.source
        let now = source.identity
        guard was.size == now.size, was.mtime == now.mtime, was.inode == now.inode, was.edgeHash == now.edgeHash else {
            throw TransferError(.sourceChanged, "\(was.path) changed since the upload began; nothing was sent (cancel \(id) to start over)",
                tokenID: nil)
        }
    }

    /// Forgets a transfer: a download's `.part` goes, an upload's server resource gets a DELETE, then the token goes.
    /// - Parameters:
    ///   - reference: a token id or token file path.
    ///   - keepParts: leave an S3 multipart upload (and its parts) on S3.
    /// - Returns: what was done, for the user.
    public func cancel(_ reference: String, keepParts: Bool = false) async throws(TransferError) -> String {
        try await onOwnThread { () throws(TransferError) in
            let job = TransferCancel(self, token: try self.loadToken(reference))
            let lock = try self.takeLock(job.token.id)
            defer { lock.release() }
            return try job.run(keepParts: keepParts)
        }
    }
}
