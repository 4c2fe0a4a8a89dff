import Glibc

/// `cancel`'s job: forgets a transfer. A stream's spool and a download's `.part` go, an upload's server
/// resource is dropped (``dropServerUpload(keepParts:)``), then the token goes.
struct TransferCancel {
    let client: TransferClient
    /// The token, with the connection settings of ``options`` merged in.
    let token: ResumeToken
    /// The options its requests go with: the token's connection settings over the client's.
    let options: TransferOptions

    init(_ client: TransferClient, _ opened: Opened) {
        self.client = client
        token = opened.token
        options = opened.options
    }

    /// Forgets the transfer (the caller holds its lock); returns what was done, for the user.
    func run(keepParts: Bool) throws(TransferError) -> String {
        var said = "cancelled \(token.id)"
        if let stream = token.upload?.stream {
            unlink(stream.spool)
            said += "; removed the spool"
        }
        if let d = token.download {
            unlink(d.partPath)
            said += "; removed \(d.partPath)"
        }
        said += try dropServerUpload(keepParts: keepParts)
        // The record first: an id is never, even for a moment, unknown to both stores.
        try? client.results.save(
            TransferRecord(
                id: token.id, kind: token.kind, outcome: .cancelled, exit: 1, resumable: false, url: token.url,
                path: token.download?.path ?? token.upload?.source.path, error: "cancelled"))
        client.store.remove(id: token.id)
        return said
    }

    /// Asks the server to drop an upload that will not be finished (`cancel`; a batch's file that changed):
    /// AbortMultipartUpload on S3 (unless `keepParts`), else a DELETE of the upload URL. Returns what was done.
    func dropServerUpload(keepParts: Bool = false) throws(TransferError) -> String {
        var said = try abortS3Upload(keepParts: keepParts)
        guard let u = token.upload else { return said }
        // A tus upload in partial uploads: each of them (tus termination), until the final upload joined them.
        let partials = (u.concat?.final == nil ? u.concat?.partials ?? [] : []).enumerated().compactMap { i, partial in
            partial.url.map { ($0, "partial upload \(i + 1)") }
        }
        for (url, what) in (u.uploadURL.map { [($0, "the upload")] } ?? []) + partials {
            var headers: HeaderFields =
                switch u.wire {
                case .tus: TusStateMachine.deleteHeaders
                case .ietf(let version): [InteropVersion.header: String(version.rawValue)]
                case .undecided, .plain, .s3: [InteropVersion.header: String(InteropVersion.newest.rawValue)]
                }
            if let stored = try? HeaderLines.parse(token.headers) {
                for f in Origin.headers(stored, for: url, named: token.url).fields { headers.append(f.name, f.value) }
            }
            let result = client.transport.makeSession().headOnly(
                TransferRequest(method: "DELETE", url: url, headers: headers), settings: options.transport,
                cancellation: Cancellation())
            switch (result.outcome, result.head?.status) {
            case (.completed, let status?) where (200..<300).contains(status) || status == 404 || status == 410:
                said += "; the server dropped \(what)"
            case (.completed, let status?):
                said += "; the server answered \(status) to DELETE of \(what)"
            default:
                said += "; the server could not be reached to drop \(what)"
            }
        }
        return said
    }

    private func abortS3Upload(keepParts: Bool) throws(TransferError) -> String {
        guard let s3 = token.upload?.s3, let uploadID = s3.uploadId else { return "" }
        if keepParts { return "; multipart upload \(uploadID) left on S3 with its parts (--keep-parts)" }
        let answers = try client.requireS3Answers()
        let target = try S3Target(s3)
        let call = S3Call(answers: answers, settings: target.signing(client.options.transport))
        switch call.send(
            client.transport.makeSession(), method: "DELETE", url: target.url(query: [("uploadId", uploadID)]),
            cancellation: Cancellation())
        {
        case .ok:
            return "; S3 dropped multipart upload \(uploadID) and its parts"
        case .refused(_, let error, _) where error?.code == "NoSuchUpload":
            return "; S3 no longer had multipart upload \(uploadID)"
        case .refused(let status, let error, _):
            throw TransferError(
                .failed,
                S3Call.failure(
                    status, error, "cannot abort the upload of \(s3.address) (cancel --keep-parts forgets it anyway)"))
        case .lost(let fault):
            throw TransferError(
                .failed,
                "cannot reach S3 to abort the upload of \(s3.address): \(fault.message) (cancel --keep-parts forgets "
                    + "it anyway)"
            )
        case .stopped:
            throw TransferError(.stopped(.interrupt), "stopped")
        }
    }
}
