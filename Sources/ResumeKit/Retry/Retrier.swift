/// Carries out ``RetryRules`` for one transfer (or one segment, or one S3 part): counts failures, says
/// each retry as an event, sleeps, and tells the loop how it goes on.
struct Retrier {
    /// How the attempt loop goes on after a failure.
    enum Next: Equatable {
        /// The wait is over: try again.
        case again
        /// `pause`, SIGTERM or Ctrl-C during the wait.
        case stopped(StopReason)
        /// Retries are used up; the message says the fault and how many retries were made.
        case exhausted(String)
        /// No retry helps; the message is the fault's.
        case failed(String)
    }

    private var backoff: Backoff
    private let waitForNetwork: Bool
    private let cancellation: Cancellation
    private let emit: EventHandler
    private let clock: any RetryClock
    /// Retry events carry this; a silent retrier (a segment among several) says nothing.
    private let announces: Bool
    /// The retries this one shares with the other segments of its transfer.
    private let budget: RetryBudget?

    init(
        _ options: TransferOptions, cancellation: Cancellation, events: @escaping EventHandler, announces: Bool = true,
        budget: RetryBudget? = nil
    ) {
        self.budget = budget
        self.backoff = Backoff(options.retry)
        self.waitForNetwork = options.waitForNetwork
        self.cancellation = cancellation
        self.emit = events
        self.clock = options.clock
        self.announces = announces
    }

    /// Decides what `fault` deserves, waits when it deserves a wait, and says how to go on.
    mutating func after(_ fault: Fault, fresh: Bool = false, progressMade: Bool) -> Next {
        let directive = RetryRules.decide(
            fault, fresh: fresh, progressMade: progressMade, waitForNetwork: waitForNetwork, backoff: &backoff,
            now: clock.now)
        switch directive {
        case .fail:
            return .failed(fault.message)
        case .exhausted:
            return .exhausted("\(fault.message); gave up after \(backoff.failures - 1) retries")
        case .waitForNetwork(let delay):
            if announces { emit(.waitingForNetwork(delay: delay, error: fault.message)) }
            return sleep(delay)
        case .retry(let delay):
            if let budget, !budget.withdraw(after: fault, progressMade: progressMade) {
                return .exhausted("\(fault.message); gave up: the retries the transfer's connections share are used up")
            }
            if announces { emit(.retry(attempt: backoff.failures, delay: delay, error: fault.message)) }
            return sleep(delay)
        }
    }

    /// How one attempt ended, for ``run(_:cancellation:events:announces:budget:fresh:stopped:explain:restart:_:)``.
    enum Attempt<Value> {
        case done(Value)
        /// The attempt failed; `progressMade`: it moved bytes that count (the count of failures starts again).
        case failed(Fault, progressMade: Bool = false)
        /// The next attempt follows at once, counting no failure (a machine that learned what to ask next).
        case next
        /// The transfer starts again from byte 0 (what the server holds changed under it): the loop allows
        /// ``RetryRules/maxRestarts`` of these, then gives up.
        case restart(String)
    }

    /// The attempt loop of every path, so a fault gets the same answer on each: runs `attempt` until it is
    /// done, each failure decided by the one policy and waited out; gives up by throwing.
    /// - Parameters:
    ///   - announces: whether retries are told as events (a segment among several keeps quiet).
    ///   - budget: the retries this loop shares with the other segments or parts of its transfer.
    ///   - fresh: whether nothing of the transfer reached the server yet (asked after each failure).
    ///   - stopped: the message of a stop during a wait.
    ///   - explain: adds what the path knows to the loop's own giving up (retries used up, no retry helps, a stop).
    ///   - restart: starts the transfer over, when the loop allows another restart.
    static func run<Value>(
        _ options: TransferOptions, cancellation: Cancellation, events: @escaping EventHandler, announces: Bool = true,
        budget: RetryBudget? = nil, fresh: () -> Bool = { false }, stopped: String,
        explain: (TransferError) throws(TransferError) -> TransferError = { $0 },
        restart: (String) throws(TransferError) -> Void = { _ in },
        _ attempt: () throws(TransferError) -> Attempt<Value>
    ) throws(TransferError) -> Value {
        var loop = Retrier(options, cancellation: cancellation, events: events, announces: announces, budget: budget)
        var restarts = 0
        while true {
            switch try attempt() {
            case .done(let value):
                return value
            case .next:
                continue
            case .restart(let reason):
                restarts += 1
                guard restarts <= RetryRules.maxRestarts else {
                    throw try explain(TransferError(.failed, "giving up: \(reason), again and again"))
                }
                try restart(reason)
            case .failed(let fault, let progressMade):
                switch loop.after(fault, fresh: fresh(), progressMade: progressMade) {
                case .again: continue
                case .stopped(let reason): throw try explain(TransferError(.stopped(reason), stopped))
                case .exhausted(let message): throw try explain(TransferError(.retriesExhausted, message))
                case .failed(let message): throw try explain(TransferError(.failed, message, status: fault.status))
                }
            }
        }
    }

    private func sleep(_ seconds: Double) -> Next {
        if clock.sleep(seconds: seconds, cancellation: cancellation) { return .again }
        return .stopped(cancellation.reason ?? .interrupt)
    }
}
