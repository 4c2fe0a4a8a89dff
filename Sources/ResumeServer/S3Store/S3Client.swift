import Crypto
import ResumeKit
import ResumeMarkup
import Synchronization

/// The S3 store's requests: signed by the client's own SigV4 code for the endpoint, region and
/// credentials the client's S3 commands would use, and sent by its libcurl transport.
///
/// Every method blocks; the store calls them on its own thread pool (``S3Store/threadPool``), never on an
/// event loop. libcurl sessions (each keeping its connections) are reused between calls.
final class S3Client: Sendable {
    /// An answer, its body read whole (S3's answers are small documents; object bodies are streamed).
    struct Response: Sendable {
        var status: Int
        var headers: HeaderFields
        var body: [UInt8]

        var etag: String? { headers["ETag"] }
        var isSuccess: Bool { (200..<300).contains(status) }
        /// S3's error code, if the body holds an `<Error>`.
        func errorCode(_ answers: S3Responses) -> String? { answers.error(body)?.code }
    }

    /// The bucket, with the served prefix as the location's key.
    let target: S3Target
    let answers = S3Responses()
    private let transport = CurlTransport()
    private let settings: TransportSettings
    /// Sessions no request holds, the last one back at the end, with the moment it came back.
    private let idle = Mutex<[(session: Session, since: ContinuousClock.Instant)]>([])
    /// Counts every request by method (and the lock's conflicts), when `serve` reports metrics.
    let metrics: ServerMetrics?

    init(target: S3Target, metrics: ServerMetrics? = nil) {
        self.target = target
        self.metrics = metrics
        var settings = TransportSettings()
        settings.stallTimeout = 30
        settings.connectTimeout = 10
        self.settings = target.signing(settings)
    }

    var bucket: String { target.location.bucket }

    /// `s3://BUCKET/PREFIX`, for messages.
    var name: String { target.location.description }

    /// Sends one request and reads its answer whole; throws only when no answer came.
    func send(
        _ method: String, key: String, query: [(String, String)] = [], headers: HeaderFields = [:], body: [UInt8]? = nil
    ) throws(S3Failure) -> Response {
        let collector = BodyCollector(limit: 16 << 20)
        var headers = headers
        if let body {
            // Small bodies (records, grants) are signed with their hash; a part or a tail is sent as
            // UNSIGNED-PAYLOAD, as the client's own S3 uploads send theirs, rather than hashed once more
            // on serve's CPU (which the upload's wall time waits for).
            let signed = body.count <= Self.hashedBodyLimit
            headers.set("x-amz-content-sha256", signed ? SHA256.hash(data: body).hex : "UNSIGNED-PAYLOAD")
            headers.set("Content-Length", String(body.count))
        }
        let request = TransferRequest(
            method: method, url: target.url(key: key, query: query), headers: headers,
            body: body.map(RequestBody.init(bytes:)))
        let result = perform(request, delegate: collector)
        guard result.outcome == .completed, let head = collector.head ?? result.head else {
            throw S3Failure("\(method) \(key): S3 sent no answer (\(result.outcome))")
        }
        return Response(status: head.status, headers: head.headers, body: collector.body)
    }

    private static let hashedBodyLimit = 1 << 20

    /// Sends a `GET` whose body goes to `delegate` as it arrives (a served object, streamed).
    func stream(key: String, headers: HeaderFields, delegate: any ExchangeDelegate, cancellation: Cancellation)
        -> ExchangeResult
    {
        perform(
            TransferRequest(method: "GET", url: target.url(key: key), headers: headers), delegate: delegate,
            cancellation: cancellation)
    }

    private func perform(
        _ request: TransferRequest, delegate: any ExchangeDelegate, cancellation: Cancellation = Cancellation()
    )
        -> ExchangeResult
    {
        metrics?.s3Request(method: request.method)
        let session = idle.withLock { $0.popLast()?.session } ?? Session(transport.makeSession())
        let result = session.session.perform(
            request, settings: settings, cancellation: cancellation, delegate: delegate)
        if result.outcome == .completed { idle.withLock { $0.append((session, .now)) } }
        return result
    }

    /// Lets go of the sessions no request took for `age`. Each holds descriptors (its connections, and
    /// the wake-up pair of the multi handle libcurl keeps for an easy handle), and a burst of requests
    /// leaves as many sessions as it had requests at once: without this they stay for good.
    func closeIdleSessions(unusedFor age: Duration) {
        let now = ContinuousClock.now
        let dropped = idle.withLock { list -> [Session] in
            let old = list.filter { now - $0.since >= age }.map(\.session)
            list.removeAll { now - $0.since >= age }
            return old
        }
        _ = dropped  // released here, outside the lock: each one's easy handle is cleaned up
    }

    /// A libcurl session, used by one thread at a time (taken from and put back into ``idle``).
    private final class Session: @unchecked Sendable {
        let session: any TransportSession
        init(_ session: any TransportSession) { self.session = session }
    }
}

/// An S3 request that got no usable answer; the client hears 503 (try again later).
struct S3Failure: Error, Sendable, CustomStringConvertible {
    var reason: String
    init(_ reason: String) { self.reason = reason }
    var description: String { reason }
    var upload: UploadFailure { UploadFailure(status: 503, "S3: \(reason)") }
}
