extension TransferClient {
    /// Starts a download whose events arrive as an `AsyncSequence` (``TransferRun/events``).
    public func start(_ request: DownloadRequest, cancellation: Cancellation = Cancellation()) -> TransferRun<DownloadResult> {
        TransferRun(cancellation: cancellation) { cancellation, events throws(TransferError) in
            try await download(request, cancellation: cancellation, events: events)
        }
    }

    /// Starts an upload whose events arrive as an `AsyncSequence` (``TransferRun/events``).
    public func start(_ request: UploadRequest, cancellation: Cancellation = Cancellation()) -> TransferRun<UploadResult> {
        TransferRun(cancellation: cancellation) { cancellation, events throws(TransferError) in
            try await upload(request, cancellation: cancellation, events: events)
        }
    }
}
