/// A transfer started by `TransferClient.start(_:)`: its events as an `AsyncSequence`, and its outcome.
///
/// ```swift
/// let run = client.start(DownloadRequest(url: url))
/// for await event in run.events { if case .progress(let bytes, _, _) = event { print(bytes) } }
/// let result = try await run.result()
/// ```
public struct TransferRun<Result: Sendable>: Sendable {
    /// Every event, in order; finishes after the last one.
    public let events: AsyncStream<TransferEvent>
    /// Stops the transfer: `.pause` commits and keeps the token, as `resumectl pause` does.
    public let cancellation: Cancellation
    private let outcome: Task<Swift.Result<Result, TransferError>, Never>

    init(
        cancellation: Cancellation,
        _ body: @escaping @Sendable (Cancellation, @escaping EventHandler) async throws(TransferError) -> Result
    ) {
        let (events, continuation) = AsyncStream<TransferEvent>.makeStream(bufferingPolicy: .unbounded)
        self.events = events
        self.cancellation = cancellation
        outcome = Task {
            defer { continuation.finish() }
            do throws(TransferError) {
                return .success(try await body(cancellation) { continuation.yield($0) })
            } catch {
                return .failure(error)
            }
        }
    }

    /// Waits for the transfer to end.
    public func result() async throws(TransferError) -> Result {
        try await outcome.value.get()
    }
}
