/// Sends S3 requests, signed by the settings' hook, and reads the (small, XML) answers.
struct S3Call {
    let answers: any S3Answers
    /// Settings whose signing hook holds the target's credentials.
    let settings: TransportSettings

    func send(
        _ session: any TransportSession, method: String, url: String, headers: HeaderFields = [:],
        body: RequestBody? = nil, cancellation: Cancellation
    ) -> S3Reply {
        let collector = BodyCollector()
        let result = session.perform(
            TransferRequest(method: method, url: url, headers: headers, body: body), settings: settings,
            cancellation: cancellation,
            delegate: collector)
        switch result.outcome {
        case .completed:
            guard let head = collector.head ?? result.head else { return .lost(.lost("S3 sent no answer")) }
            if (200..<300).contains(head.status) { return .ok(head, collector.body) }
            return .refused(
                status: head.status, error: answers.error(collector.body), retryAfter: head.headers["Retry-After"])
        case .cancelled, .abortedByDelegate:
            return .stopped
        case .stalled, .failed:
            return .lost(Fault.of(result.outcome, stallSeconds: settings.stallTimeout) ?? .lost("S3 sent no answer"))
        }
    }

    /// The line a refusal ends with: S3's code and message, else the status.
    static func failure(_ status: Int, _ error: S3ErrorBody?, _ what: String) -> String {
        "\(what): " + (error?.line ?? "S3 answered \(status)")
    }
}
