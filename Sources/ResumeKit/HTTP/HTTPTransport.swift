/// One HTTP exchange to run: the seam between the protocol logic and libcurl.
public struct TransferRequest: Sendable, Equatable {
    public var method: String
    public var url: String
    public var headers: HeaderFields
    /// Follow redirects (at most 10, http and https only). Off for upload resources, whose
    /// redirects the draft wants handled by the client.
    public var followRedirects: Bool
    /// The request body, read from a file at the time it is sent.
    public var body: RequestBody?

    public init(
        method: String, url: String, headers: HeaderFields = [:], followRedirects: Bool = false,
        body: RequestBody? = nil
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.followRedirects = followRedirects
        self.body = body
    }
}

/// A slice of an open file sent as a request body, read with `pread` so memory stays flat; or a few
/// bytes held in memory (an S3 CompleteMultipartUpload document).
public struct RequestBody: Sendable, Equatable {
    public var fileDescriptor: Int32
    public var offset: Int64
    public var length: Int64
    public var bytes: [UInt8]?
    /// The body may go on past `length`: at its end the delegate is asked for more
    /// (``ExchangeDelegate/exchange(bodyEndedAt:)``), and the request goes chunked as its length is unknown.
    public var grows = false

    public init(fileDescriptor: Int32, offset: Int64, length: Int64, grows: Bool = false) {
        self.fileDescriptor = fileDescriptor
        self.offset = offset
        self.length = length
        self.grows = grows
    }

    public init(bytes: [UInt8]) {
        self.fileDescriptor = -1
        self.offset = 0
        self.length = Int64(bytes.count)
        self.bytes = bytes
    }

    /// A body of unknown length: `fileDescriptor` (a pipe) is read with read(2) until its end, and the
    /// request goes chunked (HTTP/1.1) or framed (HTTP/2), as `curl -T -` sends it.
    public static func stream(_ fileDescriptor: Int32) -> RequestBody {
        RequestBody(fileDescriptor: fileDescriptor, offset: 0, length: -1)
    }

    /// Read until the end of its descriptor rather than a known range.
    public var isStream: Bool { length < 0 && bytes == nil }
    /// Sent without a declared length (chunked on HTTP/1.1).
    public var lengthUnknown: Bool { isStream || grows }
}

/// Knobs of the transport that hold for every exchange of one transfer.
public struct TransportSettings: Sendable, Equatable {
    /// No byte moved in either direction for this long counts as a stall.
    public var stallTimeout: Int = 30
    public var connectTimeout: Int = 30
    /// Bytes a second, 0 for no limit.
    public var maxReceiveRate: Int64 = 0
    public var maxSendRate: Int64 = 0
    /// libcurl's receive buffer: its 16 KiB default is measurably slower, and 512 KiB (its largest) beat
    /// 256 KiB on a 1 GiB download by 10 % in wall and 13 % in CPU (9 pairs, with a 1 MiB gatherer).
    public var receiveBufferSize: Int = 512 * 1024
    /// libcurl's send buffer, at its largest (2 MiB): a 1 GiB one-request upload against 512 KiB, 21
    /// pairs, CPU 0.77 at the same wall (1 MiB measured no different from 512 KiB), for 0.9 MiB of peak.
    public var uploadBufferSize: Int = 2048 * 1024
    public var verbose: Bool = false
    /// TLS, proxy, address family, HTTP version: what the token keeps.
    public var connection = ConnectionSettings()
    /// User names and passwords for this run only.
    public var credentials = Credentials()
    /// The origin that may receive `credentials.user`: the URL the user named. Nil sends them to every URL.
    public var credentialOrigin: String?
    /// Signs every request of the transfer as it is sent (S3); nil for plain HTTP.
    public var signing: SigningHook?

    public init() {}
}

/// Receives what one exchange produces. Called on the thread that runs the exchange.
public protocol ExchangeDelegate: AnyObject {
    /// An informational (1xx) response, such as the draft's `104 Upload Resumption Supported`.
    func exchange(informational head: ResponseHead)
    /// The final response head, after any followed redirects. Return false to abort: the body is unwanted.
    func exchange(head: ResponseHead, effectiveURL: String) -> Bool
    /// A piece of the response body. Return false to abort (a local write failed).
    func exchange(body: UnsafeRawBufferPointer) -> Bool
    /// Periodic progress with byte counts of this exchange. Return false to abort.
    func exchange(progressReceived received: Int64, sent: Int64) -> Bool
    /// A growing body (``RequestBody/grows``) sent its `length` bytes: the new length, or nil to end it there.
    /// May block until more is ready.
    func exchange(bodyEndedAt length: Int64) -> Int64?
}

extension ExchangeDelegate {
    public func exchange(informational head: ResponseHead) {}
    public func exchange(body: UnsafeRawBufferPointer) -> Bool { true }
    public func exchange(progressReceived received: Int64, sent: Int64) -> Bool { true }
    public func exchange(bodyEndedAt length: Int64) -> Int64? { nil }
}

/// Keeps the final head of an exchange whose body is not wanted.
final class HeadCollector: ExchangeDelegate {
    var head: ResponseHead?
    func exchange(head: ResponseHead, effectiveURL: String) -> Bool {
        self.head = head
        return true
    }
}

/// What ended an exchange.
public enum ExchangeOutcome: Sendable, Equatable {
    /// The response was received whole.
    case completed
    /// The delegate declined to go on.
    case abortedByDelegate
    /// The cancellation flag was raised.
    case cancelled
    /// No progress for the stall timeout.
    case stalled
    /// A transport failure; `retryable` says whether trying again may help.
    case failed(TransportFailure)
}

public struct TransportFailure: Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// Connection refused, reset, cut short, timed out: the network may come back.
        case network
        /// The host name does not resolve.
        case resolve
        /// Bad URL, unsupported scheme, TLS verification failure, too many redirects.
        case fatal
        /// Reading the upload source failed.
        case localRead
    }
    public var kind: Kind
    public var code: Int
    public var message: String
    /// No connection could be made at all (refused, unreachable): the network or the server is gone.
    public var unreachable: Bool
    public var description: String { message }

    public init(kind: Kind, code: Int, message: String, unreachable: Bool = false) {
        self.kind = kind
        self.code = code
        self.message = message
        self.unreachable = unreachable
    }
}

public struct ExchangeResult: Sendable, Equatable {
    public var outcome: ExchangeOutcome
    /// The last final head received, if any.
    public var head: ResponseHead?
    public var effectiveURL: String?

    public init(outcome: ExchangeOutcome, head: ResponseHead? = nil, effectiveURL: String? = nil) {
        self.outcome = outcome
        self.head = head
        self.effectiveURL = effectiveURL
    }
}

/// Makes sessions that run HTTP exchanges.
public protocol HTTPTransport: Sendable {
    /// A session for one transfer, used from one thread; it keeps connections open between exchanges.
    func makeSession() -> any TransportSession
}

/// Runs the exchanges of one transfer, one after another. `perform` blocks the calling thread until the
/// exchange ends, so callers run it on a thread of their own, never on Swift's cooperative pool.
public protocol TransportSession: AnyObject {
    func perform(
        _ request: TransferRequest, settings: TransportSettings, cancellation: Cancellation,
        delegate: any ExchangeDelegate
    ) -> ExchangeResult
}
