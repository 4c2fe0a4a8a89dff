/// How one exchange ended, with the last final head it received.
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
