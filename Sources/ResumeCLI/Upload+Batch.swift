import ResumeKit

extension Upload {
    /// `upload DIR TARGET/`: the folder as one batch; its id is announced before any byte is sent.
    /// - Parameter client: `options.client(taking:)`'s, for `request.url`, the target without a password.
    func runBatch(_ request: UploadRequest, client: TransferClient) async throws {
        let url = request.url
        let batch = BatchRequest(folder: file, target: url, upload: request, parallel: parallel, followSymlinks: followSymlinks,
            skipExisting: skipExisting)
        try background.detachIfAsked(client: client) { batch.id }
        try await BatchRun.run(id: batch.id, target: url, client: client, options: options, background: background) {
            cancellation, events throws(TransferError) in
            try await client.uploadBatch(batch, cancellation: cancellation, events: events)
        }
    }
}
