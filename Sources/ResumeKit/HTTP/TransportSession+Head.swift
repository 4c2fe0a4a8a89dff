extension TransportSession {
    /// One exchange whose body is not wanted (HEAD, OPTIONS, DELETE): its answer is the result's `head`.
    func headOnly(_ request: TransferRequest, settings: TransportSettings, cancellation: Cancellation) -> ExchangeResult
    {
        perform(request, settings: settings, cancellation: cancellation, delegate: BodyIgnored())
    }
}

private final class BodyIgnored: ExchangeDelegate {
    func exchange(head: ResponseHead, effectiveURL: String) -> Bool { true }
}
