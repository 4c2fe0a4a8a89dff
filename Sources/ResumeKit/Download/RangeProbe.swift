/// The HEAD that tells whether a URL serves its file in parallel ranges (``SegmentRules/probe(_:)``), asked by a
/// segmented download's plan and by each mirror before its first segment.
enum RangeProbe {
    case resource(DownloadStateMachine.Resource, effectiveURL: String?)
    /// The network's, or a busy server's (`503`, `429` … with `Retry-After`): worth a retry.
    case fault(Fault)
    /// The server answered, not with what parallel ranges need.
    case refused(ResponseHead, SegmentRules.Refusal)

    static func ask(
        _ url: String, headers: HeaderFields, session: any TransportSession, settings: TransportSettings,
        cancellation: Cancellation
    ) -> RangeProbe {
        let result = session.headOnly(
            TransferRequest(method: "HEAD", url: url, headers: headers, followRedirects: true),
            settings: settings, cancellation: cancellation)
        if let fault = Fault.of(result.outcome, stallSeconds: settings.stallTimeout) { return .fault(fault) }
        guard let head = result.head else { return .fault(.lost("no answer to HEAD")) }
        if RetryPolicy.isRetryable(status: head.status) {
            return .fault(.answered(head.status, retryAfter: head.headers["Retry-After"]))
        }
        switch SegmentRules.probe(head) {
        case .failure(let refusal): return .refused(head, refusal)
        case .success(let resource): return .resource(resource, effectiveURL: result.effectiveURL)
        }
    }
}
