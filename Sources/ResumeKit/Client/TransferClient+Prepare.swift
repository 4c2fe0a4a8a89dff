import FoundationEssentials

extension TransferClient {
    /// Checks a download and writes its token before any byte moves, so that its id can be announced,
    /// paused, cancelled, waited for and resumed at once (`--detach`, `--start-at`). A file already at the
    /// output path (without `force`) gets no token: running the download reports it as already complete.
    /// - Returns: the token id.
    public func prepare(_ request: DownloadRequest) throws(TransferError) -> String {
        if Route.isS3(request.url) {
            let (plain, state) = try s3Object(request)
            return try prepare(plain, s3: state)
        }
        return try prepare(request, s3: nil)
    }

    private func prepare(_ request: DownloadRequest, s3: ResumeToken.S3State?) throws(TransferError) -> String {
        try URLCheck.validate(request.url)
        _ = try HeaderLines.parse(request.headers)
        try prepareStateDirectory()
        let path = try OutputPath.resolve(url: request.url, output: request.outputPath)
        let id = TokenStore.makeID(kind: .download, url: request.url, path: path)
        let lock = try takeLock(id)
        defer { lock.release() }
        if try lock.existing(.download, "a download") != nil { return id }
        let occupant = OutputPath.occupant(path)
        if occupant == .file, !request.force { return id }
        try OutputPath.checkWritable(path, occupant: occupant)
        try store.write(ResumeToken(download: request, id: id, path: path, s3: s3))
        return id
    }

    /// Checks an upload (its source must be readable) and writes its token before any byte moves.
    /// - Returns: the token id.
    public func prepare(_ request: UploadRequest) throws(TransferError) -> String {
        if request.filePath == "-" { throw TransferError(.usage, "a stream (upload -) reads stdin: it runs in the foreground") }
        if Route.isS3(request.url) {
            _ = try S3Location.parse(request.url)
        } else {
            try URLCheck.validate(request.url)
        }
        _ = try HeaderLines.parse(request.headers)
        if let chunk = request.chunkSize, chunk <= 0 { throw TransferError(.usage, "--chunk-size must be positive") }
        let source = try SourceFile(path: request.filePath)
        try prepareStateDirectory()
        let id = uploadTokenID(request)
        let lock = try takeLock(id)
        defer { lock.release() }
        if try lock.existing(.upload, "an upload") != nil { return id }
        if Route.isS3(request.url) {
            let token = try newS3UploadToken(request, id: id, source: source.identity, events: { _ in })
            try store.write(token)
            return id
        }
        // The protocol is left open unless pinned: the detached run probes the server (`--protocol auto`).
        try store.write(ResumeToken(upload: request, id: id, part: .init(source: source.identity, wire: request.pinnedWire ?? .undecided)))
        return id
    }
}

extension ResumeToken {
    /// A new download's token: nothing committed yet.
    init(download request: DownloadRequest, id: String, path: String, s3: S3State?) {
        let part = DownloadPart(path: path, committedBytes: 0, expectedSHA256: request.expectedSHA256?.lowercased(),
            onChange: request.onChange.rawValue, s3: s3)
        self.init(id: id, url: request.url, headers: Self.storableHeaders(request.headers), transfer: .download(part))
    }

    /// A new upload's token.
    init(upload request: UploadRequest, id: String, part: UploadPart) {
        self.init(id: id, url: request.url, headers: Self.storableHeaders(request.headers), transfer: .upload(part))
    }
}
