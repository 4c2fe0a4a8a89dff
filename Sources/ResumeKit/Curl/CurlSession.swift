import CCurl
import Glibc

/// One easy handle, reset and reused for every exchange of a transfer, so that a HEAD and the PATCH after
/// it (or a resume after a stall) go over the connection libcurl already holds.
final class CurlSession: StartingSession {
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
        let (first, settings) = signed(request, settings)
        var (request, hops) = (first, 0)
        while true {
            let result: ExchangeResult
            let context: ExchangeContext
            do {
                let (handle, prepared) = try prepare(request, settings, cancellation, delegate)
                let (code, detail) = withExtendedLifetime(prepared) {
                    if let driver { driver.run(handle) } else { handle.perform() }
                }
                (result, context) = (ended(handle, prepared, code, detail), prepared)
            } catch {
                return Self.setupFailed(error)
            }
            switch follow(result, context, of: request, first: first, hops: hops) {
            case .next(let next): (request, hops) = (next, hops + 1)
            case .ended(let result): return result
            }
        }
    }

    /// See ``StartingSession``; without a multi handle the exchange runs here and now.
    func start(
        _ request: TransferRequest, settings: TransportSettings, cancellation: Cancellation,
        delegate: any ExchangeDelegate, done: @escaping (ExchangeResult) -> Void
    ) -> ExchangeResult? {
        guard let driver else {
            return perform(request, settings: settings, cancellation: cancellation, delegate: delegate)
        }
        let (first, settings) = signed(request, settings)
        return launch(first, first: first, hops: 0, driver, settings, cancellation, delegate, done)
    }

    /// Starts one hop of an exchange on the driver; its end starts the next hop (a redirect) or calls `done`.
    private func launch(
        _ request: TransferRequest, first: TransferRequest, hops: Int, _ driver: MultiDriver,
        _ settings: TransportSettings,
        _ cancellation: Cancellation, _ delegate: any ExchangeDelegate, _ done: @escaping (ExchangeResult) -> Void
    ) -> ExchangeResult? {
        do {
            let (handle, context) = try prepare(request, settings, cancellation, delegate)
            // The closure keeps the context (the callbacks' target) alive until the end.
            driver.start(handle) { [self] code, detail in
                switch follow(ended(handle, context, code, detail), context, of: request, first: first, hops: hops) {
                case .ended(let result):
                    done(result)
                case .next(let next):
                    let failed = launch(
                        next, first: first, hops: hops + 1, driver, settings, cancellation, delegate, done)
                    if let failed { done(failed) }
                }
            }
            return nil
        } catch {
            return Self.setupFailed(error)
        }
    }

    /// The request as sent first: signed once (S3), as libcurl sent a signed request's headers on to a redirect;
    /// `-u` goes to its origin only, as libcurl's own redirects did (CURLOPT_UNRESTRICTED_AUTH off).
    private func signed(
        _ request: TransferRequest, _ settings: TransportSettings
    ) -> (TransferRequest, TransportSettings) {
        var (request, settings) = (request, settings)
        settings.signing?.signer.sign(&request)
        if settings.credentialOrigin == nil { settings.credentialOrigin = request.url }
        return (request, settings)
    }

    /// Redirects one request follows at most (``TransferRequest/followRedirects``); one more fails it.
    static let maxRedirects = 10

    private enum Hop {
        case next(TransferRequest)
        case ended(ExchangeResult)
    }

    /// Where a followed redirect leads. libcurl follows one with every header it was given but Authorization and
    /// Cookie, which it keeps from another host, port or scheme (CURLOPT_UNRESTRICTED_AUTH(3)): an X-Api-Key
    /// would go wherever the server points. Followed here, each hop carries what ``Origin/headers(_:for:named:)``
    /// allows.
    private func follow(
        _ result: ExchangeResult, _ context: ExchangeContext, of request: TransferRequest, first: TransferRequest,
        hops: Int
    ) -> Hop {
        guard let redirect = context.redirect, result.outcome == .completed,
            let target = context.handle?.info(string: CURLINFO_REDIRECT_URL)
        else { return .ended(result) }
        guard hops < Self.maxRedirects else {
            let failure = TransportFailure(
                kind: .fatal, code: Int(CURLE_TOO_MANY_REDIRECTS.rawValue),
                message: "Maximum (\(Self.maxRedirects)) redirects followed")
            return .ended(ExchangeResult(outcome: .failed(failure), effectiveURL: result.effectiveURL))
        }
        var next = request
        next.url = target
        next.headers = Origin.headers(first.headers, for: target, named: first.url)
        // RFC 9110, 15.4.4: a 303 is answered with a GET (a HEAD stays a HEAD).
        if redirect.status == 303, next.method != "HEAD" { (next.method, next.body) = ("GET", nil) }
        return .next(next)
    }

    private func prepare(
        _ request: TransferRequest, _ settings: TransportSettings, _ cancellation: Cancellation,
        _ delegate: any ExchangeDelegate
    ) throws -> (EasyHandle, ExchangeContext) {
        let context = ExchangeContext(
            delegate: delegate, cancellation: cancellation, followRedirects: request.followRedirects,
            body: request.body, stallSeconds: settings.stallTimeout)
        let recovering = handleFailed
        let reused = recovering ? nil : self.handle
        reused?.reset()
        let handle = try reused ?? EasyHandle()
        self.handle = handle
        try handle.configure(for: request, settings)
        // After a failure, a connection of its own: one in a multi handle's shared cache may be as dead as the
        // one that just broke, and a body libcurl would have to send again means CURLE_SEND_FAIL_REWIND.
        if recovering { try handle.set(CURLOPT_FRESH_CONNECT, 1) }
        try context.install(on: handle)
        return (handle, context)
    }

    /// libcurl refused an option (a CurlError, whose description is libcurl's message).
    private static func setupFailed(_ error: any Error) -> ExchangeResult {
        ExchangeResult(outcome: .failed(TransportFailure(kind: .fatal, code: -1, message: "\(error)")))
    }

    private func ended(_ handle: EasyHandle, _ context: ExchangeContext, _ code: CURLcode, _ detail: String)
        -> ExchangeResult
    {
        let url = handle.info(string: CURLINFO_EFFECTIVE_URL)
        handleFailed = code != CURLE_OK
        return ExchangeResult(outcome: Self.outcome(code, detail, context), head: context.finalHead, effectiveURL: url)
    }

    private static func outcome(_ code: CURLcode, _ detail: String, _ context: ExchangeContext) -> ExchangeOutcome {
        if context.cancelled { return .cancelled }
        if context.abortedByDelegate { return .abortedByDelegate }
        if context.readFailure != 0 {
            return .failed(
                TransportFailure(
                    kind: .localRead, code: Int(code.rawValue),
                    message: "reading the source failed: \(String(cString: strerror(context.readFailure)))"))
        }
        if code == CURLE_OK { return .completed }
        // The stall timer's abort is libcurl's own timeout come earlier: classified the same way.
        let (code, detail) =
            context.stalled
            ? (CURLE_OPERATION_TIMEDOUT, "no progress for \(Int(context.stallSeconds)) s") : (code, detail)
        let error = CurlError(code, detail: detail)
        func failed(_ kind: TransportFailure.Kind, _ message: String? = nil) -> ExchangeOutcome {
            .failed(
                TransportFailure(
                    kind: kind, code: error.code, message: message ?? error.message,
                    unreachable: code == CURLE_COULDNT_CONNECT))
        }
        switch code {
        case CURLE_OPERATION_TIMEDOUT where context.finalHead != nil || context.bodySent > 0:
            return .stalled
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            return failed(.resolve)
        case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_ISSUER_ERROR:
            return failed(
                .fatal,
                "TLS: the server's certificate is not trusted (\(error.message)); give its CA with --cacert FILE")
        case CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CRL_BADFILE:
            return failed(.fatal, "TLS: \(error.message)")
        case CURLE_UNSUPPORTED_PROTOCOL where detail.contains("HTTP/0.9"):
            return failed(.fatal, "the server's answer is not HTTP (no status line)")
        case CURLE_UNSUPPORTED_PROTOCOL:
            // Every URL we start from was checked (URLCheck): only a redirect can name another scheme.
            return failed(
                .fatal,
                "the server redirected to a URL that is not http or https; only http and https are followed")
        case CURLE_OUT_OF_MEMORY where detail.isEmpty:
            // libcurl 7.88 answers a header line beyond its 100 KiB limit this way, without a detail.
            return failed(
                .fatal,
                "libcurl gave up on the response: out of memory, or a header line beyond its 100 KiB limit")
        case CURLE_URL_MALFORMAT, CURLE_TOO_MANY_REDIRECTS,
            CURLE_LOGIN_DENIED, CURLE_OUT_OF_MEMORY, CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_CIPHER, CURLE_NOT_BUILT_IN,
            CURLE_BAD_FUNCTION_ARGUMENT,
            CURLE_UNKNOWN_OPTION, CURLE_FILESIZE_EXCEEDED:
            return failed(.fatal)
        case CURLE_SEND_FAIL_REWIND:
            // A reused connection died under the body before any answer, and the body was not sent again blind
            // (ExchangeContext.rewind): transient; the next attempt asks the offset on a new connection.
            return failed(.network, "the connection broke before the server answered")
        case CURLE_READ_ERROR, CURLE_ABORTED_BY_CALLBACK:
            return failed(.localRead)
        default:
            return failed(.network)
        }
    }
}
