import FoundationEssentials

/// The one GET of a small document the client reads itself rather than saves (a folder listing, a published
/// list of sums): its body in memory, up to a limit, with the retries of any transfer.
extension TransferClient {
    /// - Parameters:
    ///   - what: the verb the messages use (`list`, `read`).
    /// - Throws: `badListing` past `limit` bytes, `failed` on a refusal, `stopped` when cancelled, and what the
    ///   attempt loop throws once retries are spent.
    func fetchSmall(
        _ url: String, headers: HeaderFields, limit: Int, what: String, session: any TransportSession,
        cancellation: Cancellation
    ) throws(TransferError) -> (body: [UInt8], contentType: String?) {
        try Retrier.run(
            options, cancellation: cancellation, events: { _ in }, stopped: "stopped while \(what)ing \(url)"
        ) {
            () throws(TransferError) in
            let collector = BodyCollector(limit: limit)
            let result = session.perform(
                TransferRequest(method: "GET", url: url, headers: headers, followRedirects: true),
                settings: options.transport, cancellation: cancellation, delegate: collector)
            switch result.outcome {
            case .completed:
                guard let head = collector.head ?? result.head else { return .failed(.lost("no answer to GET \(url)")) }
                if (200..<300).contains(head.status) { return .done((collector.body, head.headers["Content-Type"])) }
                let fault = Fault.answered(
                    head.status, retryAfter: head.headers["Retry-After"],
                    "cannot \(what) \(url): the server answered \(head.status)")
                guard RetryPolicy.isRetryable(status: head.status) else {
                    throw TransferError(.failed, fault.message, status: head.status)
                }
                return .failed(fault)
            case .abortedByDelegate:
                throw TransferError(.badListing, "\(url) is over \(limit >> 20) MiB")
            case .cancelled:
                throw TransferError(.stopped(cancellation.reason ?? .interrupt), "stopped while \(what)ing \(url)")
            case .stalled, .failed:
                return .failed(
                    Fault.of(result.outcome, stallSeconds: options.transport.stallTimeout)
                        ?? .lost("cannot \(what) \(url)"))
            }
        }
    }
}

extension TransferClient {
    /// A published list of sums (`--checksum-file`), from a local file or an http(s) URL (up to 16 MiB).
    public func checksumFile(_ location: String, headers: [String] = [], cancellation: Cancellation)
        throws(TransferError)
        -> ChecksumFile
    {
        let bytes = try document(location, headers: headers, what: "the checksum file", cancellation: cancellation)
        do {
            return try ChecksumFile(parsing: String(decoding: bytes, as: UTF8.self))
        } catch {
            throw TransferError(error.code, "\(location): \(error.message)")
        }
    }

    /// A small document the user names (a list of sums, a Metalink): a local file or an http(s) URL, read whole
    /// up to 16 MiB.
    public func document(_ location: String, headers: [String] = [], what: String, cancellation: Cancellation)
        throws(TransferError) -> [UInt8]
    {
        guard location.hasPrefix("http://") || location.hasPrefix("https://") else {
            guard let data = FileManager.default.contents(atPath: location), data.count <= 16 << 20 else {
                throw TransferError(.inputMissing, "cannot read \(what) \(location) (or it is over 16 MiB)")
            }
            return Array(data)
        }
        return try fetchSmall(
            location, headers: try HeaderLines.parse(headers), limit: 16 << 20, what: "read",
            session: transport.makeSession(), cancellation: cancellation
        ).body
    }
}
