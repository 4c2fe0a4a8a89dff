import Glibc

extension TransferClient {
    /// Downloads many files, `parallel` at a time, each resumable on its own token. With the libcurl
    /// transport the transfers run on a multi handle per lane (a network thread and connection cache each;
    /// one lane per core, for every 4 workers). Fresh small files are fetched first, on the lanes' threads
    /// alone (SmallFilePass); every other file gets a worker thread, which runs its protocol steps,
    /// checkpoints and renames.
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
        // One network thread carried every small file's exchange and callbacks, busy 85% of a 1,000-file list
        // at 8 at a time while the rest of the machine waited: a lane per core, at least 4 workers to a lane.
        let lanes = min(Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))), workers / 4)
        let earlier = await withSessionPool(lanes: lanes) { pools in
            var earlier: [Int: EarlierAttempt] = [:]
            if SmallFilePass.applies(to: options), pools.allSatisfy({ $0 is any StartingTransport }) {
                let pass = SmallFilePass(client: self, requests: requests, queue: queue, publisher: publisher,
                    cancellation: cancellation, events: events)
                let left = (try? await onOwnThread { () throws(TransferError) in
                    pass.run(on: (0..<workers).compactMap { (pools[$0 % pools.count] as? any StartingTransport)?.makeStartingSession() })
                }) ?? []
                queue.putBack(left.map(\.index))
                for file in left { earlier[file.index] = file.earlier }
            }
            // A list the pass finished needs no worker thread.
            if !queue.isDrained {
                await runWorkers(workers, on: pools, requests, queue: queue, publisher: publisher, earlier: earlier,
                    cancellation: cancellation, events: events)
            }
            return earlier
        }
        let unpublished = publisher.finish()
        let reason = cancellation.reason ?? .interrupt
        return queue.results.enumerated().map { i, result in
            if let failure = unpublished[i] { return .failure(failure) }
            if let result { return result }
            // Stopped in the pass: it had no token yet, and its `.part` is gone.
            let began = earlier[i]?.announced == true
            return .failure(TransferError(.stopped(reason), began ? "stopped before its first checkpoint; the list's next run fetches it again" : "not started"))
        }
    }

    /// Runs whatever the queue still holds, a file at a time on each of `count` worker threads.
    private func runWorkers(
        _ count: Int, on pools: [any HTTPTransport], _ requests: [DownloadRequest],
        queue: WorkQueue<Result<DownloadResult, TransferError>>, publisher: BatchPublisher,
        earlier: [Int: EarlierAttempt], cancellation: Cancellation,
        events: @escaping @Sendable (Int, TransferEvent) -> Void
    ) async {
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<count {
                let transport = pools[worker % pools.count]
                group.addTask {
                    _ = try? await onOwnThread { () throws(TransferError) in
                        let session = transport.makeSession()
                        while !cancellation.isStopped, let i = queue.take() {
                            do throws(TransferError) {
                                let result = try self.runDownload(
                                    requests[i], session: session, batch: publisher.slot(i), earlier: earlier[i],
                                    cancellation: cancellation
                                ) { events(i, $0) }
                                queue.finish(i, .success(result))
                            } catch {
                                queue.finish(i, .failure(error))
                            }
                        }
                    }
                }
            }
        }
    }
}
