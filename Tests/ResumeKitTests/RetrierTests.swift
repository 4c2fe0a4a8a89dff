import Testing
@testable import ResumeKit

/// The one attempt loop: how it ends on its own (restarts), apart from the fault table's retries.
@Suite struct RetrierTests {
    @Test func aResourceThatNeverHoldsStillIsRestartedAFewTimesThenGivenUp() {
        var options = TransferOptions()
        options.clock = NoSleepClock()
        var restarts = 0
        var attempts = 0
        do {
            let _: Int = try Retrier.run(
                options, cancellation: Cancellation(), events: { _ in }, stopped: "", restart: { _ in restarts += 1 }
            ) {
                attempts += 1
                return .restart("the file changed on the server")
            }
            Issue.record("a resource that changes on every attempt was fetched")
        } catch {
            #expect(error.code == .failed)
            #expect(error.message.contains("again and again"))
        }
        #expect(restarts == RetryRules.maxRestarts)
        #expect(attempts == RetryRules.maxRestarts + 1)
    }

    @Test func anAttemptThatMovedBytesStartsTheCountOfFailuresAgain() throws {
        var options = TransferOptions()
        options.retry = RetryPolicy(maxRetries: 2)
        options.clock = NoSleepClock()
        var attempts = 0
        let value: Int = try Retrier.run(options, cancellation: Cancellation(), events: { _ in }, stopped: "") {
            attempts += 1
            // Ten cuts, each after some bytes went through: more failures than retries, yet never exhausted.
            return attempts > 10 ? .done(attempts) : .failed(.lost("cut"), progressMade: true)
        }
        #expect(value == 11)
    }
}
