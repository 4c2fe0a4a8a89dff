import Glibc
import Synchronization
@testable import ResumeKit

/// The one scripted peer of the unit tests. Its sessions answer each request at once, on the calling thread:
/// the first requests from `script` (one answer each, in order), every later one from `handler`. Every request
/// is recorded with the number of the session that sent it. What a suite's peer knows (files, an upload
/// protocol, S3, a misfortune) is an answer: a function of the ``Call``.
final class ScriptedTransport: HTTPTransport, @unchecked Sendable {
    typealias Answer = @Sendable (Call) -> ExchangeResult

    /// A request as the peer saw it.
    struct Request: Sendable {
        var method: String
        var url: String
        var headers: HeaderFields
        /// The session that sent it, numbered from 1 in the order the sessions were made.
        var session: Int
        /// What follows the URL's `?`, or "".
        var query: String { url.split(separator: "?", maxSplits: 1).dropFirst().first.map(String.init) ?? "" }
        /// The URL's last path segment.
        var name: String { String(url.split(separator: "?")[0].split(separator: "/").last ?? "") }
    }

    private let script: Mutex<[Answer]>
    private let handler: Answer
    private let log = Mutex<(requests: [Request], sessions: Int)>(([], 0))

    init(script: [Answer] = [], handler: @escaping Answer) {
        self.script = Mutex(script)
        self.handler = handler
    }

    /// Every request so far, in the order they came.
    var requests: [Request] { log.withLock { $0.requests } }

    func makeSession() -> any TransportSession { session() }

    /// A new session; it can also start an exchange (``StartingSession``), which it runs to its end at once.
    func session() -> Session {
        Session(
            id: log.withLock {
                $0.sessions += 1; return $0.sessions
            }, transport: self)
    }

    fileprivate func answer(_ request: TransferRequest, session: Int, delegate: any ExchangeDelegate) -> ExchangeResult
    {
        let seen = log.withLock { log in
            log.requests.append(
                Request(method: request.method, url: request.url, headers: request.headers, session: session))
            return log.requests
        }
        let answer = script.withLock { $0.isEmpty ? handler : $0.removeFirst() }
        return answer(Call(request: request, session: session, seen: seen, delegate: delegate))
    }

    final class Session: StartingSession {
        let id: Int
        private let transport: ScriptedTransport

        fileprivate init(id: Int, transport: ScriptedTransport) {
            self.id = id
            self.transport = transport
        }

        func perform(
            _ request: TransferRequest, settings: TransportSettings, cancellation: Cancellation,
            delegate: any ExchangeDelegate
        )
            -> ExchangeResult
        {
            transport.answer(request, session: id, delegate: delegate)
        }

        func start(
            _ request: TransferRequest, settings: TransportSettings, cancellation: Cancellation,
            delegate: any ExchangeDelegate,
            done: @escaping (ExchangeResult) -> Void
        ) -> ExchangeResult? {
            transport.answer(request, session: id, delegate: delegate)
        }
    }
}

/// One request being answered: what it asks, and the ways to answer it.
struct Call {
    let request: TransferRequest
    /// The session that sent it.
    let session: Int
    /// Every request the peer has seen, this one last.
    let seen: [ScriptedTransport.Request]
    let delegate: any ExchangeDelegate

    var method: String { request.method }
    var query: String { seen[seen.count - 1].query }
    var name: String { seen[seen.count - 1].name }

    /// The request's body, read from its file range.
    var body: [UInt8] {
        guard let body = request.body else { return [] }
        if let bytes = body.bytes { return bytes }
        var bytes = [UInt8](repeating: 0, count: Int(body.length))
        _ = pread(body.fileDescriptor, &bytes, bytes.count, off_t(body.offset))
        return bytes
    }

    /// An informational head (1xx) before the answer.
    func informational(_ status: Int, _ fields: [(String, String)]) {
        delegate.exchange(informational: head(status, fields))
    }

    /// Tells the client how much of its body went out.
    func progress(sent: Int64) {
        _ = delegate.exchange(progressReceived: 0, sent: sent)
    }

    /// The answer `status` with `fields` and `body`.
    func answer(_ status: Int, _ fields: [(String, String)] = [], body: some Collection<UInt8> = [UInt8]())
        -> ExchangeResult
    {
        answer(head(status, fields), body: Array(body))
    }

    /// The answer `head` with `body`; with `cutAfter` the connection breaks after the head and that many body bytes.
    func answer(_ head: ResponseHead, body: [UInt8] = [], cutAfter: Int? = nil) -> ExchangeResult {
        guard delegate.exchange(head: head, effectiveURL: request.url) else {
            return ExchangeResult(outcome: .abortedByDelegate, head: head, effectiveURL: request.url)
        }
        let sent = body.prefix(cutAfter ?? body.count)
        if !sent.isEmpty, !sent.withUnsafeBytes({ delegate.exchange(body: $0) }) {
            return ExchangeResult(outcome: .abortedByDelegate, head: head, effectiveURL: request.url)
        }
        if cutAfter != nil { return ExchangeResult(outcome: .failed(.reset), head: head) }
        return ExchangeResult(outcome: .completed, head: head, effectiveURL: request.url)
    }

    /// No answer: the exchange failed with `failure`.
    func fail(_ failure: TransportFailure) -> ExchangeResult {
        ExchangeResult(outcome: .failed(failure))
    }

    /// No answer: the connection stalled.
    func stall() -> ExchangeResult {
        ExchangeResult(outcome: .stalled)
    }
}

extension TransportFailure {
    /// libcurl's failures as the tests script them.
    static let unresolved = TransportFailure(
        kind: .resolve, code: 6, message: "Could not resolve host: nowhere.invalid")
    static let refused = TransportFailure(
        kind: .network, code: 7, message: "Failed to connect: Connection refused", unreachable: true)
    static let reset = TransportFailure(kind: .network, code: 56, message: "Connection reset by peer")
}
