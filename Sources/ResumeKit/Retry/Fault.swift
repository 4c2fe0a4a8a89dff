/// How one exchange failed, in the terms every path shares: the single input of ``RetryRules``.
public enum Fault: Sendable, Equatable {
    /// The host name did not resolve.
    case unresolved(String)
    /// No connection could be made: refused, host or network unreachable.
    case unreachable(String)
    /// The exchange broke off: reset, cut short, timed out, or a response that ended early.
    case lost(String)
    /// No byte moved for the stall timeout.
    case stalled(seconds: Int)
    /// A final status a later try may turn around (408, 425, 429, 5xx), with its `Retry-After`.
    case status(Int, retryAfter: String?, message: String)
    /// Nothing a retry can mend: TLS verification, a bad URL, a refused redirect, an unreadable source.
    case fatal(String)

    /// The failure of a transport exchange.
    public init(_ failure: TransportFailure) {
        switch failure.kind {
        case .resolve: self = .unresolved(failure.message)
        case .network: self = failure.unreachable ? .unreachable(failure.message) : .lost(failure.message)
        case .fatal, .localRead: self = .fatal(failure.message)
        }
    }

    /// How an exchange that got no usable answer failed: nil when it completed or was stopped (the caller
    /// reads the answer, or stops). The one mapping of transport outcomes to faults.
    public static func of(_ outcome: ExchangeOutcome, stallSeconds: Int) -> Fault? {
        switch outcome {
        case .completed, .cancelled, .abortedByDelegate: nil
        case .stalled: .stalled(seconds: stallSeconds)
        case .failed(let failure): Fault(failure)
        }
    }

    /// A status answer: `message` says what was refused (the status alone when empty).
    public static func answered(_ status: Int, retryAfter: String?, _ message: String = "") -> Fault {
        .status(status, retryAfter: retryAfter, message: message.isEmpty ? "the server answered \(status)" : message)
    }

    /// The line the user reads (a retry event, or the last line).
    public var message: String {
        switch self {
        case .unresolved(let m), .unreachable(let m), .lost(let m), .fatal(let m), .status(_, _, let m): m
        case .stalled(let seconds): "no data for \(seconds) s"
        }
    }

    /// The HTTP status of a status fault.
    public var status: Int? {
        if case .status(let status, _, _) = self { return status }
        return nil
    }

    /// The same fault, told in other words.
    func withMessage(_ message: String) -> Fault {
        switch self {
        case .unresolved: .unresolved(message)
        case .unreachable: .unreachable(message)
        case .lost, .stalled: .lost(message)
        case .status(let status, let after, _): .status(status, retryAfter: after, message: message)
        case .fatal: .fatal(message)
        }
    }

    /// The name does not resolve or no connection can be made: what `--wait-network` waits out.
    var isNetworkDown: Bool {
        switch self {
        case .unresolved, .unreachable: true
        default: false
        }
    }
}
