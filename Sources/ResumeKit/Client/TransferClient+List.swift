extension TransferClient {
    /// Downloads many files, `parallel` at a time, each resumable on its own token. With the libcurl
    /// transport all transfers run on one multi handle (one network thread, one connection cache);
    /// each worker thread only runs a file's protocol steps, checkpoints and renames.
    /// - Returns: one result per request, in order; a failure of one file does not stop the others.
    public func downloadAll(
        _ requests: [DownloadRequest], parallel: Int, cancellation: Cancellation = Cancellation(),
        events: @escaping @Sendable (Int, TransferEvent) -> Void = { _, _ in }
    ) async -> [Result<DownloadResult, TransferError>] {
        do throws(TransferError) {
            try prepareStateDirectory()
        } catch {
            return requests.map { _ in .failure(error) }
        }
        let queue = WorkQueue<Result<DownloadResult, TransferError>>(count: requests.count)
        let workers = max(1, min(parallel, requests.count))
        let publisher = BatchPublisher(store: store)
        await withSessionPool { transport in await withTaskGroup(of: Void.self) { group in
            for _ in 0..<workers {
                group.addTask {
                    _ = try? await onOwnThread { () throws(TransferError) in
                        let session = transport.makeSession()
                        while !cancellation.isStopped, let i = queue.take() {
                            do throws(TransferError) {
                                let result = try self.runDownload(
                                    requests[i], session: session, batch: publisher.slot(i), cancellation: cancellation
                                ) { events(i, $0) }
                                queue.finish(i, .success(result))
                            } catch {
                                queue.finish(i, .failure(error))
                            }
                        }
                    }
                }
            }
        } }
        let unpublished = publisher.finish()
        let reason = cancellation.reason ?? .interrupt
        return queue.results.enumerated().map { i, result in
            if let failure = unpublished[i] { return .failure(failure) }
            return result ?? .failure(TransferError(.stopped(reason), "not started"))
        }
    }
}
