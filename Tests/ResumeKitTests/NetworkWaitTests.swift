import Testing
@testable import ResumeKit

/// Waiting for the network (`--wait-network`, detached transfers) spends no retries and backs off to 60 s at most.
@Suite struct NetworkWaitTests {
    @Test func waitsDoubleUpToSixtySecondsAndSpendNoRetries() {
        var backoff = Backoff(RetryPolicy(maxRetries: 1, baseDelay: 1, maxDelay: 30))
        var delays: [Double] = []
        for _ in 0..<12 { delays.append(backoff.networkWait(progressMade: false)) }
        #expect(delays.allSatisfy { $0 > 0 && $0 <= Backoff.maxNetworkWait })
        #expect(delays[0] <= 1)
        #expect(delays.suffix(4).allSatisfy { $0 >= 30 }, "capped at 60 s with jitter, not at the retry cap: \(delays)")
        // Twelve waits later, the single retry is still there, and the one after is refused as before.
        #expect(backoff.next(progressMade: false) != nil)
        #expect(backoff.next(progressMade: false) == nil)
    }

    @Test func progressStartsTheWaitsAgain() {
        var backoff = Backoff(RetryPolicy(maxRetries: 3, baseDelay: 1))
        for _ in 0..<8 { _ = backoff.networkWait(progressMade: false) }
        #expect(backoff.networkWait(progressMade: true) <= 1)
    }

    @Test func onlyNamesThatDoNotResolveAndRefusedConnectionsCount() {
        #expect(Fault(TransportFailure(kind: .resolve, code: 6, message: "")).isNetworkDown)
        #expect(Fault(TransportFailure(kind: .network, code: 7, message: "", unreachable: true)).isNetworkDown)
        #expect(!Fault(TransportFailure(kind: .network, code: 56, message: "reset")).isNetworkDown)
        #expect(!Fault(TransportFailure(kind: .fatal, code: 60, message: "tls")).isNetworkDown)
    }
}
