import Glibc
import FoundationEssentials

extension TransferClient {
    /// Uploads a file with the IETF draft, tus or a plain request, continuing this file's earlier attempt to the same
    /// URL.
    public func upload(
        _ request: UploadRequest, cancellation: Cancellation = Cancellation(), events: @escaping EventHandler = { _ in }
    ) async throws(TransferError) -> UploadResult {
        try await onOwnThread { () throws(TransferError) in
            try self.recorded(
                id: self.uploadTokenID(request), kind: .upload, url: request.url, source: request.filePath,
                { () throws(TransferError) in
                    try self.runUpload(request, cancellation: cancellation, events: events)
                }, as: TransferResult.uploaded)
        }
    }

    /// Uploads a file (to a URL or `s3://BUCKET/KEY`) or a stream, continuing this request's earlier attempt.
    /// `smallFile`: a folder batch's small file over the worker's connection, with its token in memory only (no
    /// lock, no token, no result record); retries go on within this run, a kill sends it again.
    func runUpload(
        _ request: UploadRequest, smallFile session: (any TransportSession)? = nil, cancellation: Cancellation,
        events: @escaping EventHandler
    ) throws(TransferError) -> UploadResult {
        let small = session != nil
        guard case .opened(var opened) = try open(.upload(request, batchFile: small), events: events) else {
            throw TransferError(.usage, "no upload")
        }
        defer { opened.lock.release() }
        var probe = request.probed
        var part = try opened.token.uploadPart()
        if part.wire == .undecided {
            // A new token, or one written by `--detach` before anything was sent, has no protocol yet: the one
            // pinned, else what one OPTIONS probe finds (`probe` keeps its answer).
            if request.pinnedWire == nil, probe == nil {
                probe = try self.probe(
                    request.url, headers: request.headers, cancellation: cancellation, events: events)
            }
            part.wire =
                switch (request.pinnedWire, probe) {
                case (let pinned?, _): pinned
                case (nil, .tus?): .tus(expires: nil, checksum: nil)
                case (nil, .ietf(let named)?): .ietf(named ?? request.interopVersion ?? .newest)
                default: .ietf(request.interopVersion ?? .newest)
                }
            opened.token = opened.token.with(.upload(part))
        }
        // Nothing of this upload is known on the server yet (a new token, or one `--detach` or a cut creation left):
        // what `--connections` can do with it is decided now.
        if request.connections > 1, part.uploadURL == nil, part.concat == nil, part.acknowledgedBytes == 0 {
            if opened.source != nil {
                probe = try parallelProbe(
                    request, found: probe, wire: &part.wire, cancellation: cancellation, events: events)
            }
            part.concat = concatenation(
                request, wire: part.wire, probe: probe, size: part.source.size, stream: opened.source == nil,
                events: events)
            opened.token = opened.token.with(.upload(part))
        }
        guard let source = opened.source else {
            return try runStreamUpload(
                request, opened: opened, probe: probe, cancellation: cancellation, events: events)
        }
        if !small { try store.write(opened.token) }
        return try runUploadOperation(
            opened.token, source: source, options: opened.options, versionPinned: request.interopVersion != nil,
            chunkSize: request.chunkSize,
            capabilities: probe?.tusCapabilities, durable: !small, session: session, cancellation: cancellation,
            events: events)
    }

    /// Picks the token's protocol machine and runs it; not `durable` (a batch's small file), the token is never
    /// written.
    /// A refusal nothing can continue takes the token with it; a 401 says what to do (``explainingLogin(_:)``).
    func runUploadOperation(
        _ token: ResumeToken, source: SourceFile, options: TransferOptions, versionPinned: Bool, chunkSize: Int64?,
        capabilities: TusCapabilities?, durable: Bool = true, session: (any TransportSession)? = nil,
        cancellation: Cancellation,
        events: @escaping EventHandler
    ) throws(TransferError) -> UploadResult {
        let (machine, options) = try uploadMachine(
            token, versionPinned: versionPinned, chunkSize: chunkSize, capabilities: capabilities, options: options)
        func run<M: UploadMachine>(_ machine: M) throws(TransferError) -> UploadResult {
            // S3's parts and tus's partial uploads go several at once through the session pool (a batch's own, when
            // it runs in one).
            try withSessionPool(machine is S3MultipartMachine || machine is TusConcatMachine) {
                transport throws(TransferError) in
                try UploadOperation(
                    token: token, source: source, machine: machine, store: store, transport: transport,
                    options: options,
                    cancellation: cancellation, events: events, session: session, durable: durable,
                    budget: requestBudget
                ).runToEnd()
            }
        }
        do throws(TransferError) {
            if let capabilities, let refusal = TusStateMachine.refusal(capabilities, size: source.identity.size) {
                throw TransferError(.failed, refusal)
            }
            return try run(machine)
        } catch {
            // Nothing can continue an upload refused for good (on S3: before an upload id): its token would only
            // clutter `list`.
            if durable, error.tokenID == nil { store.remove(id: token.id) }
            throw explainingLogin(error)
        }
    }

    /// One OPTIONS to the creation URL, never with the body: which protocol does the server speak? A busy
    /// server (429, 503) or a lost connection is asked again under the transfer's retry rules, so that a
    /// tus server that was briefly busy is not taken for one that speaks no tus.
    /// `asking`: the probe's own headers (by default our newest interop version).
    func probe(
        _ url: String, headers given: [String], cancellation: Cancellation, events: @escaping EventHandler,
        asking: HeaderFields = ProtocolProbe.requestHeaders
    ) throws(TransferError) -> ProtocolProbe {
        var headers = (try? HeaderLines.parse(given)) ?? [:]
        for field in asking.fields { headers.set(field.name, field.value) }
        let session = transport.makeSession()
        return try Retrier.run(
            options, cancellation: cancellation, events: events, fresh: { true },
            stopped: "stopped before the upload began"
        ) { () throws(TransferError) in
            let result = session.headOnly(
                TransferRequest(method: "OPTIONS", url: url, headers: headers), settings: options.transport,
                cancellation: cancellation)
            if let fault = Fault.of(result.outcome, stallSeconds: options.transport.stallTimeout) {
                return .failed(fault)
            }
            guard result.outcome == .completed else {
                throw TransferError(.stopped(cancellation.reason ?? .interrupt), "stopped before the upload began")
            }
            guard let head = result.head else { return .done(.unknown) }
            guard RetryPolicy.isBusy(status: head.status) else { return .done(ProtocolProbe.decide(head)) }
            return .failed(
                .answered(
                    head.status, retryAfter: head.headers["Retry-After"],
                    "the server answered \(head.status) to OPTIONS"))
        }
    }

    /// `--connections N` (N > 1) to a new upload: what the server can do in parallel. Under `auto`, a draft
    /// server is asked once more, as tus (`Tus-Resumable`, no interop version): `serve` speaks both, and only
    /// tus's concatenation sends one file over several connections, so a tus answer offering it wins. A pinned
    /// tus upload is probed as tus. Returns the probe that decided `wire`.
    func parallelProbe(
        _ request: UploadRequest, found: ProtocolProbe?, wire: inout ResumeToken.UploadPart.Wire,
        cancellation: Cancellation, events: @escaping EventHandler
    ) throws(TransferError) -> ProtocolProbe? {
        let asTus: Bool
        switch (request.uploadProtocol, found) {
        case (.tus, nil): asTus = true
        case (.auto, .ietf?): asTus = request.interopVersion == nil
        default: asTus = false
        }
        guard asTus else { return found }
        let tus = try probe(
            request.url, headers: request.headers, cancellation: cancellation, events: events,
            asking: ["Tus-Resumable": TusStateMachine.version])
        guard case .tus(let capabilities) = tus else { return found }
        if request.uploadProtocol == .tus || capabilities.extensions.contains("concatenation") {
            wire = .tus(expires: nil, checksum: nil)
            return tus
        }
        return found
    }

    /// The partial uploads of a new tus upload with `--connections N`; nil, said in one line, when the upload
    /// goes as one request stream.
    func concatenation(
        _ request: UploadRequest, wire: ResumeToken.UploadPart.Wire, probe: ProtocolProbe?, size: Int64, stream: Bool,
        events: EventHandler
    ) -> ResumeToken.TusConcat? {
        let why: String
        switch wire {
        case .tus where stream:
            why = "a stream is sent in order"
        case .tus:
            guard let capabilities = probe?.tusCapabilities else {
                why = "the server cannot append in parallel (it did not say what it offers)"
                break
            }
            guard capabilities.extensions.contains("concatenation") else {
                why = "the server cannot append in parallel (its tus offers no concatenation)"
                break
            }
            guard size > 1 else { return nil }
            return ResumeToken.TusConcat(size: size, count: request.connections)
        case .ietf where probe != .unknown:
            why = "the server cannot append in parallel (it speaks the resumable-upload draft)"
        case .ietf, .plain, .undecided: why = "the server cannot append in parallel"
        case .s3: return nil
        }
        events(.warning(.oneConnection(why)))
        return nil
    }

    /// Continues an upload ``TransferClient/resume(_:newURL:headers:cancellation:events:)`` opened.
    func runResumeUpload(_ opened: Opened, cancellation: Cancellation, events: @escaping EventHandler)
        throws(TransferError) -> UploadResult
    {
        let part = try opened.token.uploadPart()
        guard let source = opened.source else {
            return try continueStream(opened, cancellation: cancellation, events: events)
        }
        if part.uploadURL == nil, part.uploadProtocol != .s3, part.concat == nil {
            events(
                .note(
                    part.resumable
                        ? "the server never confirmed the upload; sending the whole file"
                        : "the server cannot resume uploads; sending the whole file again"))
        }
        return try runUploadOperation(
            opened.token, source: source, options: opened.options, versionPinned: false, chunkSize: nil,
            capabilities: nil,
            cancellation: cancellation, events: events)
    }

    /// Forgets the transfer `reference` (a token id or file) names: a download's `.part` goes, an upload's server
    /// resource gets a DELETE (`keepParts`: an S3 multipart upload stays), then the token. Returns what was done.
    public func cancel(_ reference: String, keepParts: Bool = false) async throws(TransferError) -> String {
        try await onOwnThread { () throws(TransferError) in
            guard case .opened(let opened) = try self.open(.cancel(try self.loadToken(reference))) else {
                throw TransferError(.inputMissing, "no token named \(reference)")
            }
            defer { opened.lock.release() }
            return try TransferCancel(self, opened).run(keepParts: keepParts)
        }
    }

    // MARK: Protocol machines

    /// Every upload's protocol machine is built here, for a file or for a stream at the bytes its spool made
    /// durable, with the options its requests go with (an S3 upload's are signed). `versionPinned`: the draft's
    /// version may not be negotiated down; `capabilities`: what a tus server's OPTIONS said, when asked.
    func uploadMachine(
        _ token: ResumeToken, versionPinned: Bool, chunkSize: Int64? = nil, capabilities: TusCapabilities?,
        options: TransferOptions
    ) throws(TransferError) -> (machine: any UploadMachine, options: TransferOptions) {
        let part = try token.uploadPart()
        let stream = part.stream
        let size = stream?.durable ?? part.source.size
        let lengthKnown = stream?.ended ?? true
        switch part.wire {
        case .undecided:
            throw TransferError(.badToken, "token \(token.id) names no upload protocol")
        case .ietf(let version):
            return (
                IETFStateMachine(
                    size: size, version: version, versionPinned: versionPinned || part.uploadURL != nil,
                    uploadURL: part.uploadURL,
                    chunkSize: chunkSize, lengthKnown: lengthKnown), options
            )
        case .tus(let expires, let checksum):
            let filename = stream == nil ? String(part.source.path.split(separator: "/").last ?? "upload") : "stdin"
            if let concat = part.concat, stream == nil {
                // `--limit-rate` is the upload's: the partials in flight share it.
                var shared = options
                if shared.transport.maxSendRate > 0 {
                    shared.transport.maxSendRate = max(1, shared.transport.maxSendRate / Int64(concat.partials.count))
                }
                return (
                    TusConcatMachine(
                        size: size, creationURL: token.url, filename: filename, concat: concat,
                        capabilities: capabilities, checksum: checksum, expires: expires, chunkSize: chunkSize), shared
                )
            }
            return (
                TusStateMachine(
                    size: size, creationURL: token.url, filename: filename, capabilities: capabilities,
                    uploadURL: part.uploadURL,
                    checksum: checksum, expires: expires, chunkSize: chunkSize, lengthKnown: lengthKnown), options
            )
        case .plain:
            return (PlainUploadMachine(size: size), options)  // not for a stream: see runStream
        case .s3(let state):
            // Signed, and `--limit-rate` shared by the parts in flight.
            let target = try S3Target(state)
            let parallel = Int64(max(1, state.parallel ?? S3Options().parallel))
            var signed = options
            signed.transport = target.signing(options.transport)
            if signed.transport.maxSendRate > 0 {
                signed.transport.maxSendRate = max(1, signed.transport.maxSendRate / parallel)
            }
            // S3 answers a part with a head and no body: libcurl's default receive buffer is plenty.
            signed.transport.receiveBufferSize = 16 * 1024
            // Parts go several at once: 256 KiB a connection sends as fast over loopback as 512, within 32 MiB.
            signed.transport.uploadBufferSize = 256 * 1024
            let machine = S3MultipartMachine(
                state: state, size: part.source.size, final: lengthKnown, stream: stream != nil,
                headers: (try? HeaderLines.parse(token.headers)) ?? [:], endpoint: target.endpoint,
                answers: try requireS3Answers())
            return (machine, signed)
        }
    }

    // MARK: Streams

    /// `producer | resumectl upload - URL`: the IETF draft, tus or S3 multipart with the length unknown until
    /// stdin ends; the same stream again continues a cut upload. `probe`: what the protocol's choice found.
    func runStreamUpload(
        _ request: UploadRequest, opened: Opened, probe: ProtocolProbe?, cancellation: Cancellation,
        events: @escaping EventHandler
    ) throws(TransferError) -> UploadResult {
        if !opened.isNew { return try continueStream(opened, cancellation: cancellation, events: events) }
        let spoolMax = request.spoolMax ?? (1 << 30)
        var token = opened.token
        var part = try token.uploadPart()
        if let partSize = part.s3?.partSize {
            // A part is cut only once the spool holds all of it: a smaller spool could never send one.
            guard spoolMax >= partSize else {
                throw TransferError(
                    .usage,
                    "--spool-max (\(spoolMax >> 20) MiB) must hold at least one part (--part-size \(partSize >> 20) "
                        + "MiB)"
                )
            }
        } else if part.wire == .plain || probe == .unknown {
            // A server that named neither tus nor the draft would take the first append as the whole file.
            return try PlainStreamUpload(
                url: request.url, headers: try HeaderLines.parse(token.headers), input: STDIN_FILENO,
                transport: transport,
                options: opened.options, cancellation: cancellation, emit: events
            ).run()
        }
        try store.state.make(store.state.spool)
        let spool = try Spool.create(path: store.state.spool(token.id))
        part.stream = .init(
            spool: spool.path, start: 0, durable: 0, ended: false, spoolMax: spoolMax,
            ledger: StreamLedger(blockSize: StreamLedger.blockSize(spoolMax: spoolMax)), synced: 0)
        token = token.with(.upload(part))
        do { try store.save(token) } catch {
            spool.remove()
            throw TransferError(.localIO, "\(error)")
        }
        return try runStream(
            token, spool: spool, versionPinned: request.interopVersion != nil, capabilities: probe?.tusCapabilities,
            replay: false, options: opened.options, cancellation: cancellation, events: events)
    }

    /// A stream upload's token: from the spool once its stream ended, else from the same stream piped again.
    func continueStream(_ opened: Opened, cancellation: Cancellation, events: @escaping EventHandler)
        throws(TransferError) -> UploadResult
    {
        let token = opened.token
        let part = try token.uploadPart()
        guard let stream = part.stream else { throw TransferError(.badToken, "token \(token.id) has no stream state") }
        if !stream.ended, isatty(STDIN_FILENO) != 0 {
            throw TransferError(
                .inputMissing,
                "the stream of \(token.id) was cut before its end: pipe the same stream in again (producer | resumectl "
                    + "resume \(token.id))"
            )
        }
        let spool = try Spool.reopen(path: stream.spool, start: stream.start, synced: stream.synced ?? stream.durable)
        events(
            .note(
                stream.ended
                    ? "the stream ended before; sending the rest from the spool"
                    : "checking the replayed stream against the \(stream.durable) bytes already read"))
        return try runStream(
            token, spool: spool, versionPinned: part.uploadURL != nil, capabilities: nil, replay: !stream.ended,
            options: opened.options, cancellation: cancellation, events: events)
    }

    private func runStream(
        _ token: ResumeToken, spool: Spool, versionPinned: Bool, capabilities: TusCapabilities?, replay: Bool,
        options: TransferOptions,
        cancellation: Cancellation, events: @escaping EventHandler
    ) throws(TransferError) -> UploadResult {
        let part = try token.uploadPart()
        let (machine, options) = try uploadMachine(
            token, versionPinned: versionPinned, capabilities: capabilities, options: options)
        guard let sender = machine as? any StreamingUploadMachine else {
            throw TransferError(
                .badToken,
                "token \(token.id): a stream cannot go by \(part.uploadProtocol?.rawValue ?? "no protocol") here")
        }
        let hashes = options.computeSHA256 && (part.stream?.durable == 0 || replay)
        do {
            // S3's parts go several at once through the session pool, as a file's do.
            return try withSessionPool(part.s3 != nil) { transport throws(TransferError) in
                let upload = try StreamUpload(
                    token: token, spool: spool, sender: sender, input: STDIN_FILENO, hashesWholeStream: hashes,
                    store: store, transport: transport, options: options, cancellation: cancellation, events: events)
                if replay { try upload.verifyReplay() }
                return try upload.run()
            }
        } catch {
            if error.tokenID == nil {
                // Refused for good: nothing can continue it, and the spool never outlives its token.
                store.remove(id: token.id)
                spool.remove()
            }
            throw explainingLogin(error)
        }
    }

    // MARK: S3

    /// A new S3 upload's token: the target, the part size (raised to fit 10,000 parts, said once), no parts yet.
    func newS3UploadToken(
        _ request: UploadRequest, id: String, source: ResumeToken.SourceIdentity, events: EventHandler
    ) throws(TransferError) -> ResumeToken {
        let location = try S3Location.parse(request.url)
        guard !location.isPrefix else {
            throw TransferError(.usage, "\(request.url) names no object: give s3://BUCKET/KEY")
        }
        let target = try S3Target(location, choices: request.s3.choices, forcePathStyle: request.s3.forcePathStyle)
        let (partSize, raised) = try MultipartPlan.partSize(fileSize: source.size, requested: request.s3.partSize)
        if raised { events(.note("part size raised to \(partSize >> 20) MiB: S3 takes at most 10,000 parts")) }
        var state = target.state
        state.partSize = partSize
        state.parallel = request.s3.parallel
        state.checksum = request.s3.checksum
        state.parts = []
        var part = ResumeToken.UploadPart(source: source, wire: .s3(state))
        part.batch = request.batch
        return ResumeToken(id: id, url: location.description, headers: request.headers, transfer: .upload(part))
    }
}
