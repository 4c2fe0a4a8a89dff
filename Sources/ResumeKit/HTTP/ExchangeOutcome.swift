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
    /// A transport failure, sorted by what a retry can do about it.
    case failed(TransportFailure)
}
