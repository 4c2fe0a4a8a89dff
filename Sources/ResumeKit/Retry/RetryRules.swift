/// The pure policy: a fault, the transfer's situation and its backoff → a directive.
public enum RetryRules {
    /// How often one transfer may start again from byte 0 because the resource changed under it: a file
    /// rewritten while it is fetched or sent is worth a few restarts, one that never holds still is not.
    static let maxRestarts = 5

    /// The one rule for "nothing of this transfer reached the server yet" (the `fresh` of ``decide``):
    /// no byte is held on either side (`held`) and the server never answered or named the transfer (`known`).
    static func isFresh(held: Int64, known: Bool) -> Bool { held == 0 && !known }

    /// - Parameter fresh: see ``isFresh(held:known:)``: a name that does not resolve is then a typo, not a
    ///   network that went away, and fails at once.
    static func decide(
        _ fault: Fault, fresh: Bool, progressMade: Bool, waitForNetwork: Bool, backoff: inout Backoff, now: Int64
    ) -> RetryDirective {
        if case .fatal = fault { return .fail }
        if waitForNetwork, fault.isNetworkDown {
            return .waitForNetwork(delay: backoff.networkWait(progressMade: progressMade))
        }
        if case .unresolved = fault, fresh { return .fail }
        let retryAfter: String? = if case .status(_, let after, _) = fault { after } else { nil }
        guard let delay = backoff.next(progressMade: progressMade, retryAfter: retryAfter, now: now) else {
            return .exhausted
        }
        return .retry(delay: delay)
    }
}
