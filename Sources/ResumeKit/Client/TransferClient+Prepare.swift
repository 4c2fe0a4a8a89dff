import FoundationEssentials

extension TransferClient {
    /// Checks a download and writes its token before any byte moves, so that its id can be announced,
    /// paused, cancelled, waited for and resumed at once (`--detach`, `--start-at`). A file already at the
    /// output path (without `force`) gets no token: running the download reports it as already complete.
    /// - Returns: the token id.
    public func prepare(_ request: DownloadRequest) throws(TransferError) -> String {
        try prepareStateDirectory()
        let (opening, lock) = try openDownload(request)
        defer { lock.release() }
        if case .token(let token, isNew: true) = opening { try store.write(token) }
        return lock.id
    }

    /// Checks an upload (its source must be readable) and writes its token before any byte moves.
    /// - Returns: the token id.
    public func prepare(_ request: UploadRequest) throws(TransferError) -> String {
        if request.filePath == "-" { throw TransferError(.usage, "a stream (upload -) reads stdin: it runs in the foreground") }
        try prepareStateDirectory()
        let (source, existing, lock) = try openUpload(request)
        defer { lock.release() }
        guard existing == nil else { return lock.id }
        // The protocol is left open unless pinned: the detached run probes the server (`--protocol auto`).
        try store.write(Route.isS3(request.url)
            ? try newS3UploadToken(request, id: lock.id, source: source.identity, events: { _ in })
            : ResumeToken(upload: request, id: lock.id, part: .init(source: source.identity, wire: request.pinnedWire ?? .undecided)))
        return lock.id
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
        var part = part
        part.batch = request.batch
        self.init(id: id, url: request.url, headers: Self.storableHeaders(request.headers), transfer: .upload(part))
    }
}
