import FoundationEssentials
import Glibc

extension TransferClient {
    /// Where stream uploads keep their spools: `STATE/spool/<id>` (folder 0700, files 0600).
    func spoolPath(id: String) throws(TransferError) -> String {
        let folder = store.directory + "/spool"
        if mkdir(folder, 0o700) != 0 && errno != EEXIST {
            throw TransferError(.localIO, "cannot create \(folder): \(String(cString: strerror(errno)))")
        }
        return folder + "/" + id
    }

    /// `producer | resumectl upload - URL`: the IETF draft with the length unknown until stdin ends.
    /// Running it again (or `resume`) with the same stream continues a cut upload.
    func runStreamUpload(_ request: UploadRequest, cancellation: Cancellation, events: @escaping EventHandler) throws(TransferError) -> UploadResult {
        if S3Location.isS3(request.url) {
            throw TransferError(.usage, "a stream (upload -) goes to an http(s) URL with the IETF draft; S3 takes files only")
        }
        try URLCheck.validate(request.url)
        _ = try HeaderLines.parse(request.headers)
        switch request.uploadProtocol {
        case .auto, .ietf: break
        case .tus, .plain: throw TransferError(.usage, "a stream (upload -) needs the IETF draft: its length is unknown when it starts")
        }
        if let max = request.spoolMax, max < 1 << 20 { throw TransferError(.usage, "--spool-max must be at least 1M") }
        try prepareStateDirectory()
        let id = uploadTokenID(request)
        let lock = try takeLock(id)
        defer { lock.release() }
        if store.exists(id: id) {
            let token = try loadToken(id)
            guard token.upload?.stream != nil else { throw TransferError(.badToken, "token \(id) is not a stream upload") }
            return try continueStream(token, headers: request.headers, cancellation: cancellation, events: events)
        }
        let spoolMax = request.spoolMax ?? (1 << 30)
        var token = ResumeToken(id: id, kind: .upload, url: request.url, headers: ResumeToken.storableHeaders(request.headers))
        let version = request.interopVersion ?? .newest
        token.upload = .init(
            uploadURL: nil, interopVersion: version.rawValue,
            source: .init(path: "-", size: 0, mtime: 0, inode: 0, edgeHash: ""), acknowledgedBytes: 0, resumable: true,
            protocolName: UploadProtocol.ietf.rawValue)
        let spool = try Spool.create(path: try spoolPath(id: id))
        token.upload!.stream = .init(spool: spool.path, start: 0, durable: 0, ended: false, spoolMax: spoolMax,
            ledger: StreamLedger(blockSize: StreamLedger.blockSize(spoolMax: spoolMax)))
        token.headers = HeaderLines.merge(stored: token.headers, given: request.headers)
        let options = connectionOptions(for: &token, events: events)
        do { try store.save(token) } catch {
            spool.remove()
            throw TransferError(.localIO, "\(error)")
        }
        let machine = IETFStateMachine(size: 0, version: version, versionPinned: request.interopVersion != nil, lengthKnown: false)
        return try runStream(token, spool: spool, machine: machine, replay: false, options: options, cancellation: cancellation, events: events)
    }

    /// A stream upload's token: from the spool once its stream ended, else from the same stream piped again.
    func continueStream(_ token: ResumeToken, headers: [String], cancellation: Cancellation, events: @escaping EventHandler) throws(TransferError) -> UploadResult {
        var token = token
        let stream = token.upload!.stream!
        if !stream.ended, isatty(STDIN_FILENO) != 0 {
            throw TransferError(.inputMissing,
                "the stream of \(token.id) was cut before its end: pipe the same stream in again (producer | resumectl resume \(token.id))")
        }
        let spool = try Spool.reopen(path: stream.spool, start: stream.start, durable: stream.durable)
        token.headers = HeaderLines.merge(stored: token.headers, given: headers)
        let options = connectionOptions(for: &token, events: events)
        let version = token.upload!.interopVersion.flatMap(InteropVersion.init(rawValue:)) ?? .newest
        let machine = IETFStateMachine(
            size: stream.durable, version: version, versionPinned: token.upload!.uploadURL != nil, uploadURL: token.upload!.uploadURL,
            lengthKnown: stream.ended)
        if stream.ended {
            events(.note("the stream ended before; sending the rest from the spool"))
        } else {
            events(.note("checking the replayed stream against the \(stream.durable) bytes already read"))
        }
        return try runStream(token, spool: spool, machine: machine, replay: !stream.ended, options: options, cancellation: cancellation,
            events: events)
    }

    private func runStream(
        _ token: ResumeToken, spool: Spool, machine: IETFStateMachine, replay: Bool, options: TransferOptions, cancellation: Cancellation,
        events: @escaping EventHandler
    ) throws(TransferError) -> UploadResult {
        let upload = StreamUpload(
            token: token, spool: spool, machine: machine, input: STDIN_FILENO, hashesWholeStream: options.computeSHA256 && (token.upload!.stream!.durable == 0 || replay),
            store: store, transport: transport, options: options, cancellation: cancellation, events: events)
        do {
            if replay { try upload.verifyReplay() }
            return try upload.run()
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
