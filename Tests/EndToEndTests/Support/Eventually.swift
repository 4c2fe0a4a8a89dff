/// Polls `condition` every 10 ms until it holds; throws after `timeout`.
public func eventually(timeout: Duration = .seconds(5), _ condition: () throws -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while try !condition() {
        guard ContinuousClock.now < deadline else { throw SupportError("condition not met within \(timeout)") }
        try await Task.sleep(for: .milliseconds(10))
    }
}
