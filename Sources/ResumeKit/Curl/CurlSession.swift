import CCurl
import Glibc

/// One easy handle, reset and reused for every exchange of a transfer, so that a HEAD and the PATCH after
/// it (or a resume after a stall) go over the connection libcurl already holds.
final class CurlSession: TransportSession {
    private var handle: EasyHandle?
    /// The last exchange failed in libcurl: its handle is not used again. On the multi interface a handle
    /// whose name did not resolve answers its next transfer with CURLE_BAD_FUNCTION_ARGUMENT (libcurl 7.88).
    private var handleFailed = false
    private let driver: MultiDriver?

    init(driver: MultiDriver?) { self.driver = driver }

    func perform(
        _ request: TransferRequest, settings: TransportSettings, cancellation: Cancellation,
        delegate: any ExchangeDelegate
    ) -> ExchangeResult {
        var request = request
        settings.signing?.signer.sign(&request)
        let context = ExchangeContext(
            delegate: delegate, cancellation: cancellation, followRedirects: request.followRedirects,
            body: request.body, stallSeconds: settings.stallTimeout)
        let handle: EasyHandle
        do {
            let recovering = handleFailed
            if let existing = self.handle, !handleFailed {
                existing.reset()
                handle = existing
            } else {
                handle = try EasyHandle()
                self.handle = handle
            }
            try configure(handle, request, settings)
            // After a failure the next exchange opens a connection of its own: one kept in a multi handle's
            // shared cache may be as dead as the one that just broke, and a body libcurl would then have to
            // send again is what CURLE_SEND_FAIL_REWIND is about.
            if recovering { try handle.set(CURLOPT_FRESH_CONNECT, 1) }
            try context.install(on: handle)
        } catch {
            let message = (error as? CurlError)?.message ?? "\(error)"
            return ExchangeResult(outcome: .failed(TransportFailure(kind: .fatal, code: -1, message: message)))
        }
        let (code, detail) = withExtendedLifetime(context) {
            if let driver { driver.run(handle) } else { handle.perform() }
        }
        let url = handle.info(string: CURLINFO_EFFECTIVE_URL)
        handleFailed = code != CURLE_OK
        return ExchangeResult(outcome: outcome(code, detail, context), head: context.finalHead, effectiveURL: url)
    }

    private func configure(_ h: EasyHandle, _ request: TransferRequest, _ settings: TransportSettings) throws {
        try h.set(CURLOPT_URL, request.url)
        try h.set(CURLOPT_PROTOCOLS_STR, "http,https")
        try h.set(CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
        try h.set(CURLOPT_FOLLOWLOCATION, request.followRedirects ? 1 : 0)
        try h.set(CURLOPT_MAXREDIRS, 10)
        try h.set(CURLOPT_USERAGENT, settings.connection.userAgent ?? CurlTransport.userAgent)
        try h.set(CURLOPT_SUPPRESS_CONNECT_HEADERS, 1)
        try h.set(CURLOPT_TCP_KEEPALIVE, 1)
        // Under a rate limit libcurl moves a whole buffer at once and then sleeps, reading no response
        // meanwhile: a buffer of 1/16 of a second keeps the rate even and a 104 noticed within a fraction
        // of a second.
        func buffer(_ size: Int, limit: Int64) -> Int { limit > 0 ? Int(min(Int64(size), max(16 * 1024, limit / 16))) : size }
        try h.set(CURLOPT_BUFFERSIZE, buffer(settings.receiveBufferSize, limit: settings.maxReceiveRate))
        try h.set(CURLOPT_UPLOAD_BUFFERSIZE, buffer(settings.uploadBufferSize, limit: settings.maxSendRate))
        try h.set(CURLOPT_CONNECTTIMEOUT, settings.connectTimeout)
        // A stall is less than one byte a second for the whole stall window.
        try h.set(CURLOPT_LOW_SPEED_LIMIT, 1)
        try h.set(CURLOPT_LOW_SPEED_TIME, settings.stallTimeout)
        if settings.maxReceiveRate > 0 { try h.set(CURLOPT_MAX_RECV_SPEED_LARGE, offset: settings.maxReceiveRate) }
        if settings.maxSendRate > 0 { try h.set(CURLOPT_MAX_SEND_SPEED_LARGE, offset: settings.maxSendRate) }
        if settings.verbose { try VerboseTrace.install(on: h) }
        try h.apply(settings.connection, settings.credentials, origin: settings.credentialOrigin, url: request.url)

        var headers = request.headers
        switch request.method {
        case "GET":
            try h.set(CURLOPT_HTTPGET, 1)
        case "HEAD":
            try h.set(CURLOPT_NOBODY, 1)
        default:
            try h.set(CURLOPT_CUSTOMREQUEST, request.method)
        }
        if request.method != "HEAD", request.method != "GET", request.body != nil || request.method == "PATCH" {
            // Upload mode streams the body from the read callback and keeps libcurl's form defaults out.
            try h.set(CURLOPT_UPLOAD, 1)
            // -1 (a stream, a growing body): libcurl sends the body chunked.
            try h.set(CURLOPT_INFILESIZE_LARGE, offset: request.body.map { $0.lengthUnknown ? -1 : $0.length } ?? 0)
            if !headers.contains("Content-Type") { headers.append("Content-Type", "application/octet-stream") }
            // A 104 does not release libcurl's 100-continue wait: never ask for one, unless the request does
            // (S3 parts: a refusal then costs no body).
            if !headers.contains("Expect") { headers.set("Expect", "") }
        }
        try h.set(CURLOPT_HTTPHEADER, list: headers.fields.map { field in
            field.value.isEmpty ? "\(field.name):" : "\(field.name): \(field.value)"
        })
    }

    private func outcome(_ code: CURLcode, _ detail: String, _ context: ExchangeContext) -> ExchangeOutcome {
        if context.cancelled { return .cancelled }
        if context.abortedByDelegate { return .abortedByDelegate }
        if context.readFailure != 0 {
            return .failed(TransportFailure(kind: .localRead, code: Int(code.rawValue),
                message: "reading the source failed: \(String(cString: strerror(context.readFailure)))"))
        }
        if code == CURLE_OK { return .completed }
        // The stall timer's abort is libcurl's own timeout come earlier: classified the same way.
        let (code, detail) = context.stalled
            ? (CURLE_OPERATION_TIMEDOUT, "no progress for \(Int(context.stallSeconds)) s") : (code, detail)
        let error = CurlError(code, detail: detail)
        switch code {
        case CURLE_OPERATION_TIMEDOUT where context.headDelivered || context.bodySent > 0:
            return .stalled
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            return .failed(TransportFailure(kind: .resolve, code: error.code, message: error.message))
        case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_ISSUER_ERROR:
            return .failed(TransportFailure(kind: .fatal, code: error.code,
                message: "TLS: the server's certificate is not trusted (\(error.message)); give its CA with --cacert FILE"))
        case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
            return .failed(TransportFailure(kind: .fatal, code: error.code, message: "TLS: \(error.message)"))
        case CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CRL_BADFILE:
            return .failed(TransportFailure(kind: .fatal, code: error.code, message: "TLS: \(error.message)"))
        case CURLE_UNSUPPORTED_PROTOCOL where detail.contains("HTTP/0.9"):
            return .failed(TransportFailure(kind: .fatal, code: error.code, message: "the server's answer is not HTTP (no status line)"))
        case CURLE_UNSUPPORTED_PROTOCOL:
            // Every URL we start from was checked (URLCheck): only a redirect can name another scheme.
            return .failed(TransportFailure(kind: .fatal, code: error.code,
                message: "the server redirected to a URL that is not http or https; only http and https are followed"))
        case CURLE_OUT_OF_MEMORY where detail.isEmpty:
            // libcurl 7.88 answers a header line beyond its 100 KiB limit this way, without a detail.
            return .failed(TransportFailure(kind: .fatal, code: error.code,
                message: "libcurl gave up on the response: out of memory, or a header line beyond its 100 KiB limit"))
        case CURLE_URL_MALFORMAT, CURLE_TOO_MANY_REDIRECTS,
            CURLE_LOGIN_DENIED, CURLE_OUT_OF_MEMORY, CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_CIPHER, CURLE_NOT_BUILT_IN, CURLE_BAD_FUNCTION_ARGUMENT,
            CURLE_UNKNOWN_OPTION, CURLE_FILESIZE_EXCEEDED:
            return .failed(TransportFailure(kind: .fatal, code: error.code, message: error.message))
        case CURLE_SEND_FAIL_REWIND:
            // A reused connection died under the body before any answer, and the body was not sent again blind
            // (ExchangeContext.rewind): transient; the next attempt asks the offset on a new connection.
            return .failed(TransportFailure(kind: .network, code: error.code, message: "the connection broke before the server answered"))
        case CURLE_READ_ERROR, CURLE_ABORTED_BY_CALLBACK:
            return .failed(TransportFailure(kind: .localRead, code: error.code, message: error.message))
        case CURLE_COULDNT_CONNECT:
            return .failed(TransportFailure(kind: .network, code: error.code, message: error.message, unreachable: true))
        default:
            return .failed(TransportFailure(kind: .network, code: error.code, message: error.message))
        }
    }
}
