import Testing
@testable import ResumeKit

/// The retries the segments of one transfer share (a token bucket, as in the AWS SDKs' standard retry).
@Suite struct RetryBudgetTests {
    private func retrier(_ budget: RetryBudget?, retries: Int = 10) -> Retrier {
        var options = TransferOptions()
        options.retry = RetryPolicy(maxRetries: retries)
        options.clock = NoSleepClock()
        return Retrier(options, cancellation: Cancellation(), events: { _ in }, announces: false, budget: budget)
    }

    @Test func aSegmentThatUsedTheBudgetCannotRetryWhileOthersFail() {
        let budget = RetryBudget(retries: 3)
        var a = retrier(budget)
        var b = retrier(budget)
        // Three fruitless retries between them empty the bucket, though each is far from its own ten.
        #expect(a.after(.lost("cut"), progressMade: false) == .again)
        #expect(a.after(.lost("cut"), progressMade: false) == .again)
        #expect(b.after(.lost("cut"), progressMade: false) == .again)
        guard case .exhausted(let message) = a.after(.lost("cut"), progressMade: false) else {
            Issue.record("the fourth fruitless retry of the transfer was allowed")
            return
        }
        #expect(message.contains("share"))
        guard case .exhausted = b.after(.lost("cut"), progressMade: false) else {
            Issue.record("the other segment retried on an empty bucket")
            return
        }
    }

    @Test func retriesAfterProgressCostNothingAndStallsCostTwice() {
        let budget = RetryBudget(retries: 2)
        var a = retrier(budget)
        for _ in 0..<20 { #expect(a.after(.lost("cut"), progressMade: true) == .again) }
        #expect(budget.remaining == 2 * RetryBudget.retryCost)
        #expect(a.after(.stalled(seconds: 30), progressMade: false) == .again)
        #expect(budget.remaining == 0)
    }

    @Test func unlimitedRetriesShareNoBudget() {
        #expect(RetryBudget.forSegments(RetryPolicy(maxRetries: nil), count: 4) == nil)
        #expect(RetryBudget.forSegments(RetryPolicy(maxRetries: 10), count: 4)?.remaining == 40 * RetryBudget.retryCost)
    }

    @Test func withoutABudgetASegmentKeepsItsOwnCount() {
        var a = retrier(nil, retries: 2)
        #expect(a.after(.lost("cut"), progressMade: false) == .again)
        #expect(a.after(.lost("cut"), progressMade: false) == .again)
        guard case .exhausted = a.after(.lost("cut"), progressMade: false) else {
            Issue.record("a third retry of two")
            return
        }
    }
}
