import Testing
@testable import ResumeKit

@Suite struct RetryPolicyTests {
    @Test func backoffDoublesWithJitterAndIsCapped() {
        let p = RetryPolicy(maxRetries: 20, baseDelay: 1, maxDelay: 30)
        #expect(p.delay(failures: 1, jitter: 0) == 0.5)
        #expect(p.delay(failures: 1, jitter: 1) == 1)
        #expect(p.delay(failures: 4, jitter: 1) == 8)
        #expect(p.delay(failures: 10, jitter: 1) == 30)
        #expect(p.delay(failures: 10, jitter: 0) == 15)
    }

    @Test func retriesRunOut() {
        let p = RetryPolicy(maxRetries: 2)
        #expect(p.delay(failures: 2, jitter: 0.5) != nil)
        #expect(p.delay(failures: 3, jitter: 0.5) == nil)
        #expect(RetryPolicy(maxRetries: 0).delay(failures: 1, jitter: 0) == nil)
    }

    @Test func infiniteNeverRunsOut() {
        #expect(RetryPolicy(maxRetries: nil).delay(failures: 100_000, jitter: 0) == 15)
    }

    @Test func retryAfterWins() {
        #expect(RetryPolicy.default.delay(failures: 1, retryAfter: 7, jitter: 0) == 7)
        #expect(RetryPolicy.default.delay(failures: 1, retryAfter: 99999, jitter: 0) == 600)
        #expect(RetryPolicy.retryAfter("120", now: 0) == 120)
        #expect(RetryPolicy.retryAfter("Thu, 01 Jan 1970 00:01:40 GMT", now: 40) == 60)
        #expect(RetryPolicy.retryAfter("soon", now: 0) == nil)
    }
}
