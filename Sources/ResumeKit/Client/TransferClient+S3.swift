extension TransferClient {
    /// The XML reader S3 calls need; only the `resumectl-s3` program links one.
    func requireS3Answers() throws(TransferError) -> any S3Answers {
        guard let s3Answers else {
            throw TransferError(.failed, "S3 transfers are handled by resumectl-s3, which this program was not given")
        }
        return s3Answers
    }

    // MARK: Downloads

    /// An `s3://BUCKET/KEY` download as the signed HTTP download it is: the object's URL on its endpoint,
    /// and what the token keeps to sign again on resume.
    func s3Object(_ request: DownloadRequest) throws(TransferError) -> (DownloadRequest, ResumeToken.S3State) {
        let location = try S3Location.parse(request.url)
        guard !location.isPrefix else {
            throw TransferError(.usage, "\(request.url) is a prefix: give -o DIR to download every object under it")
        }
        let target = try S3Target(location, choices: request.s3.choices, forcePathStyle: request.s3.forcePathStyle)
        var plain = request
        plain.url = target.url()
        return (plain, target.state)
    }

    /// Signs every request of a download whose token names an S3 object.
    func signingS3(_ options: TransferOptions, for token: ResumeToken) throws(TransferError) -> TransferOptions {
        guard let s3 = token.s3 else { return options }
        var signed = options
        signed.transport = try S3Target(s3).signing(options.transport)
        return signed
    }

    /// A download S3 refused says why in S3's words (`NoSuchKey`, `AccessDenied` …): the error body of one
    /// more signed request, read only after the refusal (the download path keeps no bodies of errors).
    func explainingS3(_ error: TransferError, token: ResumeToken, options: TransferOptions) -> TransferError {
        guard let s3 = token.s3, error.code == .failed, let status = error.status, (400..<500).contains(status), let answers = s3Answers else {
            return error
        }
        let call = S3Call(answers: answers, settings: options.transport)
        let reply = call.send(transport.makeSession(), method: "GET", url: token.url, headers: ["Range": "bytes=0-0"],
            cancellation: Cancellation())
        guard case .refused(_, let body?, _) = reply else { return error }
        var explained = error
        explained.message = "\(s3.address): \(body.line)"
        return explained
    }

    /// The objects under an S3 prefix as downloads into `folder` (``S3Listing``), and a line for each key refused.
    public func s3Listing(
        _ url: String, folder: String, options: S3Options, headers: [String] = [], onChange: DownloadStateMachine.OnChange = .restart,
        force: Bool = false, cancellation: Cancellation = Cancellation(), events: @escaping EventHandler = { _ in }
    ) async throws(TransferError) -> (requests: [DownloadRequest], refused: [String]) {
        try await onOwnThread { () throws(TransferError) in
            let listing = try S3Listing(url, s3: options, answers: try self.requireS3Answers(), transport: self.transport, options: self.options)
            let template = DownloadRequest(url: url, headers: headers, onChange: onChange, force: force, s3: options)
            return try listing.downloads(try listing.objects(cancellation: cancellation, events: events), folder: folder, template: template)
        }
    }

    // MARK: Uploads

    /// A new S3 upload's token: the target, the part size (raised to fit 10,000 parts, said once), no parts yet.
    func newS3UploadToken(
        _ request: UploadRequest, id: String, source: ResumeToken.SourceIdentity, events: EventHandler
    ) throws(TransferError) -> ResumeToken {
        let location = try S3Location.parse(request.url)
        guard !location.isPrefix else { throw TransferError(.usage, "\(request.url) names no object: give s3://BUCKET/KEY") }
        let target = try S3Target(location, choices: request.s3.choices, forcePathStyle: request.s3.forcePathStyle)
        let (partSize, raised) = try MultipartPlan.partSize(fileSize: source.size, requested: request.s3.partSize)
        if raised {
            events(.note("part size raised to \(partSize >> 20) MiB: S3 takes at most 10,000 parts"))
        }
        var state = target.state
        state.partSize = partSize
        state.parallel = request.s3.parallel
        state.checksum = request.s3.checksum
        state.parts = []
        var part = ResumeToken.UploadPart(source: source, wire: .s3(state))
        part.batch = request.batch
        return ResumeToken(id: id, url: location.description, headers: request.headers, transfer: .upload(part))
    }

    /// The machine of an S3 upload's token (a file's, or a stream's at the bytes its spool made durable), and
    /// the settings its requests go with: signed, and `--limit-rate` shared by the parts in flight.
    func s3Machine(_ token: ResumeToken, options: TransferOptions) throws(TransferError) -> (S3MultipartMachine, TransferOptions) {
        let part = try token.uploadPart()
        guard let state = part.s3 else { throw TransferError(.badToken, "token \(token.id) is not an S3 upload") }
        let target = try S3Target(state)
        let parallel = Int64(max(1, state.parallel ?? S3Options().parallel))
        var signed = options
        signed.transport = target.signing(options.transport)
        if signed.transport.maxSendRate > 0 { signed.transport.maxSendRate = max(1, signed.transport.maxSendRate / parallel) }
        // S3 answers a part with a head and no body: libcurl's default receive buffer is plenty.
        signed.transport.receiveBufferSize = 16 * 1024
        // Parts go several at once: 256 KiB a connection sends as fast over loopback as 512 and keeps
        // the upload within 32 MiB.
        signed.transport.uploadBufferSize = 256 * 1024
        let machine = S3MultipartMachine(
            state: state, size: part.source.size, final: part.stream?.ended ?? true, stream: part.stream != nil,
            headers: (try? HeaderLines.parse(token.headers)) ?? [:], endpoint: target.endpoint, answers: try requireS3Answers())
        return (machine, signed)
    }
}
