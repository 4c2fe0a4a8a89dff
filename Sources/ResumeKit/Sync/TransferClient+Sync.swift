import Glibc

/// `resumectl sync`: a folder batch (down: ``FolderRequest``, up: ``BatchRequest``) with `sync` set runs the
/// plan of ``SyncPlan`` and then its deletes; these compute the plan alone (`--dry-run`) and run the deletes.
extension TransferClient {
    /// The plan of a sync up, from the folder and the target's listing; nothing is written anywhere.
    public func planSync(
        _ request: BatchRequest, cancellation: Cancellation = Cancellation(),
        events: @escaping @Sendable (BatchEvent) -> Void = { _ in }
    ) async throws(TransferError) -> SyncPlan {
        try await onOwnThread { () throws(TransferError) in
            try BatchNaming.checkTarget(request.target)
            guard BatchRequest.isFolder(request.folder) else {
                throw TransferError(.inputMissing, "\(request.folder) is not a folder")
            }
            let tree = try BatchTree(root: OutputPath.absolute(request.folder), follow: request.followSymlinks)
            for line in tree.skipped + tree.refused { events(.leftOut(line)) }
            return try self.syncPlan(request, tree: tree, write: false, cancellation: cancellation)
        }
    }

    /// The plan of a sync down, from the listing and the folder; nothing is written anywhere.
    public func planSync(
        _ request: FolderRequest, cancellation: Cancellation = Cancellation(),
        events: @escaping @Sendable (BatchEvent) -> Void = { _ in }
    ) async throws(TransferError) -> SyncPlan {
        try await FolderDownload(client: self, request: request).plan(cancellation: cancellation, events: events)
    }

    /// The folder's files against the target's listing (the folder download's walk: a URL's listing, an S3
    /// prefix's objects); a target folder that does not exist yet holds nothing.
    func syncPlan(_ request: BatchRequest, tree: BatchTree, write: Bool, cancellation: Cancellation)
        throws(TransferError)
        -> SyncPlan
    {
        let sync = request.sync ?? SyncOptions()
        let listing = FolderRequest(
            url: request.target, folder: request.folder,
            template: DownloadRequest(url: request.target, headers: request.upload.headers, s3: request.upload.s3))
        var listed: [FolderWalk.File] = []
        do {
            listed = try FolderDownload(client: self, request: listing).walk(cancellation: cancellation) { _ in }.files
        } catch  where error.status == 404 {}
        var remote = listed.map(\.syncFile)
        var local = tree.files.map(\.syncFile)
        if sync.checksum {
            if !Route.isS3(request.target) {
                SyncSides.reprDigests(
                    &remote, urls: Dictionary(listed.map { ($0.relative, $0.url) }, uniquingKeysWith: { a, _ in a }),
                    other: local, headers: try HeaderLines.parse(request.upload.headers),
                    session: transport.makeSession(), settings: options.transport, cancellation: cancellation)
            }
            let state = store.state
            if write { try? state.make(state.batches) }
            try SyncSides.hash(
                &local, folder: OutputPath.absolute(request.folder), other: remote,
                cache: (state.batches + "/\(request.id).sums", write))
        }
        return try SyncPlan(source: local, destination: remote, sourceComplete: tree.complete, options: sync)
    }

    /// The delete phase of a sync up, once every file of the plan arrived: DELETE of each extra file (a
    /// `serve` folder), or DeleteObjects (S3). A failure is the batch's, so the next run deletes again.
    func deleteExtras(
        _ plan: SyncPlan, _ request: BatchRequest, tally: BatchTally, cancellation: Cancellation,
        events: @escaping @Sendable (BatchEvent) -> Void
    ) {
        let sofar = tally.summary(id: "", stopped: nil)
        let extras = plan.actions.filter { $0.kind == .delete }.map(\.path)
        guard !extras.isEmpty, sofar.failed.isEmpty, sofar.stopped == nil, !cancellation.isStopped else { return }
        let items = extras.map {
            BatchFile(path: request.folder + "/" + $0, target: BatchNaming.target(request.target, relative: $0))
        }
        let session = transport.makeSession()
        do throws(TransferError) {
            if Route.isS3(request.target) {
                let s3 = request.upload.s3
                let location = try S3Location.parse(request.target)
                let target = try S3Target(location, choices: s3.choices, forcePathStyle: s3.forcePathStyle)
                let call = S3Call(answers: try requireS3Answers(), settings: target.signing(options.transport))
                try SyncSides.deleteKeys(
                    extras.map { location.key + $0 }, call: call, target: target, session: session, options: options,
                    cancellation: cancellation)
                for item in items { events(.file(item, .deleted)) }
                return
            }
            let headers = try HeaderLines.parse(request.upload.headers)
            for (k, item) in items.enumerated() {
                do throws(TransferError) {
                    try SyncSides.deleteURL(
                        item.target, headers: headers, session: session, options: options, cancellation: cancellation)
                    events(.file(item, .deleted))
                } catch {
                    tally.failed(tally.files + k, item, error)
                    if case .stopped = error.code {} else { events(.file(item, .failed(error))) }
                }
            }
        } catch {
            let item = BatchFile(path: request.folder, target: request.target)
            tally.failed(tally.files, item, error)
            events(.file(item, .failed(error)))
        }
    }
}

extension SyncPlan {
    /// Sends the plan's actions as events (and the note that `--checksum` fell back, once); returns them by path.
    static func announce(_ plan: SyncPlan?, events: (BatchEvent) -> Void) -> [String: SyncAction] {
        guard let plan else { return [:] }
        for action in plan.actions { events(.planned(action)) }
        if plan.noHash { events(.transfer(BatchFile(path: "", target: ""), .note(plan.noHashNote))) }
        return Dictionary(plan.actions.map { ($0.path, $0) }, uniquingKeysWith: { first, _ in first })
    }

    public var noHashNote: String {
        "warning: --checksum: a side offers no hash of some files (a plain HTTP listing, a multipart S3 object); "
            + "those were compared by size and time"
    }
}
