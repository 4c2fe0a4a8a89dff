import FoundationEssentials
import Glibc

extension TransferClient {
    /// Where stream uploads keep their spools: `STATE/spool/<id>` (folder 0700, files 0600).
    func spoolPath(id: String) throws(TransferError) -> String {
        try store.state.make(store.state.spool)
        return store.state.spool(id)
    }

    /// What a stream's request must say beyond a file's, checked before its opening: an S3 object (never a
    /// prefix) and a spool of at least 1 MiB; the state folder is made for the spool.
    func checkStream(_ request: UploadRequest) throws(TransferError) {
        if case .s3Prefix = try Route(request.url) { throw TransferError(.usage, "\(request.url) names no object: give s3://BUCKET/KEY") }
        if let max = request.spoolMax, max < 1 << 20 { throw TransferError(.usage, "--spool-max must be at least 1M") }
        try prepareStateDirectory()
    }

    /// `producer | resumectl upload - URL`: the IETF draft, tus or S3 multipart with the length unknown until
    /// stdin ends. Running it again (or `resume`) with the same stream continues a cut upload (`existing`, the
    /// token ``openUpload(_:)`` found under the lock the caller holds).
    func runStreamUpload(
        _ request: UploadRequest, existing: ResumeToken?, id: String, cancellation: Cancellation, events: @escaping EventHandler
    ) throws(TransferError) -> UploadResult {
        if let existing { return try continueStream(existing, headers: request.headers, cancellation: cancellation, events: events) }
        let given = try HeaderLines.parse(request.headers)
        let spoolMax = request.spoolMax ?? (1 << 30)
        var probe: ProtocolProbe?
        let stdin = ResumeToken.SourceIdentity(path: "-", size: 0, mtime: 0, inode: 0, edgeHash: "")
        var token = try newUploadToken(request, id: id, source: stdin, probe: &probe, cancellation: cancellation, events: events)
        var part = try token.uploadPart()
        if let partSize = part.s3?.partSize {
            // A part is cut only once the spool holds all of it: a smaller spool could never send one.
            guard spoolMax >= partSize else {
                throw TransferError(.usage, "--spool-max (\(spoolMax >> 20) MiB) must hold at least one part (--part-size \(partSize >> 20) MiB)")
            }
        } else if part.wire == .plain || probe == .unknown {
            // A server that named neither tus nor the draft would take the first append as the whole file.
            return try PlainStreamUpload(
                url: request.url, headers: given, input: STDIN_FILENO, transport: transport,
                options: connectionOptions(for: &token, events: events), cancellation: cancellation, emit: events
            ).run()
        }
        let spool = try Spool.create(path: try spoolPath(id: id))
        part.stream = .init(spool: spool.path, start: 0, durable: 0, ended: false, spoolMax: spoolMax,
            ledger: StreamLedger(blockSize: StreamLedger.blockSize(spoolMax: spoolMax)), synced: 0)
        token = token.with(.upload(part))
        let options = connectionOptions(for: &token, given: request.headers, events: events)
        do { try store.save(token) } catch {
            spool.remove()
            throw TransferError(.localIO, "\(error)")
        }
        var capabilities: TusCapabilities?
        if case .tus(let found) = probe { capabilities = found }
        return try runStream(token, spool: spool, versionPinned: request.interopVersion != nil, capabilities: capabilities, replay: false,
            options: options, cancellation: cancellation, events: events)
    }

    /// A stream upload's token: from the spool once its stream ended, else from the same stream piped again.
    func continueStream(_ token: ResumeToken, headers: [String], cancellation: Cancellation, events: @escaping EventHandler) throws(TransferError) -> UploadResult {
        var token = token
        let part = try token.uploadPart()
        guard let stream = part.stream else { throw TransferError(.badToken, "token \(token.id) has no stream state") }
        if !stream.ended, isatty(STDIN_FILENO) != 0 {
            throw TransferError(.inputMissing,
                "the stream of \(token.id) was cut before its end: pipe the same stream in again (producer | resumectl resume \(token.id))")
        }
        let spool = try Spool.reopen(path: stream.spool, start: stream.start, synced: stream.synced ?? stream.durable)
        let options = connectionOptions(for: &token, given: headers, events: events)

        if stream.ended {
            events(.note("the stream ended before; sending the rest from the spool"))
        } else {
            events(.note("checking the replayed stream against the \(stream.durable) bytes already read"))
        }
        return try runStream(token, spool: spool, versionPinned: part.uploadURL != nil, capabilities: nil, replay: !stream.ended,
            options: options, cancellation: cancellation, events: events)
    }

    private func runStream(
        _ token: ResumeToken, spool: Spool, versionPinned: Bool, capabilities: TusCapabilities?, replay: Bool, options: TransferOptions,
        cancellation: Cancellation, events: @escaping EventHandler
    ) throws(TransferError) -> UploadResult {
        let part = try token.uploadPart()
        guard let stream = part.stream else { throw TransferError(.badToken, "token \(token.id) has no stream state") }
        let (machine, options) = try uploadMachine(token, versionPinned: versionPinned, capabilities: capabilities, options: options)
        guard let sender = machine as? any StreamingUploadMachine else {
            throw TransferError(.badToken, "token \(token.id): a stream cannot go by \(part.uploadProtocol?.rawValue ?? "no protocol") here")
        }
        let hashes = options.computeSHA256 && (stream.durable == 0 || replay)
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
}
