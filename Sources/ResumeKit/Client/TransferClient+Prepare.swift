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
        let (opened, existing, lock) = try openUpload(request)
        defer { lock.release() }
        guard existing == nil, let source = opened else { return lock.id }
        // The protocol is left open unless pinned: the detached run probes the server (`--protocol auto`).
        try store.write(Route.isS3(request.url)
            ? try newS3UploadToken(request, id: lock.id, source: source.identity, events: { _ in })
            : ResumeToken(upload: request, id: lock.id, part: .init(source: source.identity, wire: request.pinnedWire ?? .undecided)))
        return lock.id
    }
}
