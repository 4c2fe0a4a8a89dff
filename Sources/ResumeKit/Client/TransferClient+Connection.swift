extension TransferClient {
    /// The options one transfer runs with: the connection settings stored in its token, overridden by the
    /// ones given now, which the token then keeps (without secrets). Credentials go only to the token's URL.
    /// - Parameter given: `-H` lines of this run, which override the token's by name (the token's encoding keeps
    ///   secrets out of the file, see `Redact`).
    func connectionOptions(for token: inout ResumeToken, given: [String] = [], events: EventHandler) -> TransferOptions {
        // Credential headers are kept by name only (see Redact): one line says which to give again.
        let missing = token.missingHeaders(given: given, login: options.transport.credentials.authenticates)
        if !missing.isEmpty { events(.warning(.withheldHeaders(missing))) }
        token.headers = HeaderLines.merge(stored: token.headers, given: given)
        let merged = (token.connection ?? ConnectionSettings()).overridden(by: options.transport.connection)
        token.connection = merged.storable.isEmpty ? nil : merged.storable
        var effective = options
        effective.transport.connection = merged
        effective.transport.credentialOrigin = token.url
        if merged.insecure == true { events(.warning(.insecure)) }
        return effective
    }

    /// Runs `body` with the transport for many exchanges at once (segments, S3's parts, a list's downloads):
    /// the one session pool, a libcurl multi handle driven from one thread with one connection cache, made
    /// here only and shut down when `body` ends. A pool already (a batch's), or another transport (a test's), is used as it is.
    func withSessionPool<T, E: Error>(_ wanted: Bool = true, _ body: (any HTTPTransport) throws(E) -> T) throws(E) -> T {
        let pool = wanted && (transport as? CurlTransport)?.isMulti == false ? try? CurlTransport.multi() : nil
        defer { pool?.shutdown() }
        return try body(pool ?? transport)
    }

    /// ``withSessionPool(_:_:)`` for work that waits on tasks, with `lanes` pools (each its own thread and
    /// connection cache) where one network thread would be the bottleneck: a list of small files.
    func withSessionPool<T>(lanes: Int = 1, _ body: ([any HTTPTransport]) async -> T) async -> T {
        let pools = transport is CurlTransport ? (0..<max(1, lanes)).compactMap { _ in try? CurlTransport.multi() } : []
        defer { for pool in pools { pool.shutdown() } }
        return await body(pools.isEmpty ? [transport] : pools)
    }

    /// A 401 says what to do: credentials are never stored, so a resume needs them again.
    func explainingLogin(_ error: TransferError) -> TransferError {
        guard error.code == .failed, error.status == 401 else { return error }
        var explained = error
        explained.message += options.transport.credentials.authenticates
            ? "; the login was refused"
            : "; the server wants a login: pass -u USER[:PASSWORD] or --netrc (credentials are never kept in the token)"
        return explained
    }
}
