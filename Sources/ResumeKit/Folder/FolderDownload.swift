import FoundationEssentials
import Glibc

/// A folder down as one batch (`b-…`): the listing walked (or the S3 prefix listed), then every file through
/// ``TransferClient/downloadAll(_:parallel:cancellation:events:)``, each resumable on its own token. Its ledger
/// says what the listing said of a finished file, so that running it again fetches no finished file again
/// unless the listing now says otherwise.
struct FolderDownload {
    let client: TransferClient
    let request: FolderRequest

    func run(cancellation: Cancellation, events: @escaping @Sendable (BatchEvent) -> Void) async throws(TransferError)
        -> BatchSummary
    {
        let id = request.id
        let lock = try client.openBatch(id)
        defer { lock.release() }
        let state = client.store.state
        // Before the record: a list that cannot be read ends a first run with no batch to resume.
        let sums = try await checksums(cancellation: cancellation, events: events)
        var record = BatchRecord(request)
        if let earlier = BatchLedger.record(state: state, id: id) { record.createdAt = earlier.createdAt }
        try BatchLedger.save(record, state: state)
        try OutputPath.makeFolders(request.folder)
        let folder = record.folder
        let found = try await onOwnThread { () throws(TransferError) in
            try self.walk(cancellation: cancellation, events: events)
        }
        for line in found.leftOut { events(.leftOut(line)) }
        let files = found.files.filter { file in
            guard let refusal = Self.refusal(folder, file.relative) else { return true }
            events(.leftOut("\(file.url): skipped, \(refusal)"))
            return false
        }
        events(.announced(id: id, files: files.count, bytes: files.reduce(0) { $0 + ($1.size ?? 0) }))
        var plan: SyncPlan?
        do throws(TransferError) {
            if request.sync != nil { plan = try syncPlan(files, complete: found.complete, write: true) }
        } catch {
            BatchLedger.remove(state: state, id: id)  // refused before any byte: nothing to resume
            throw error
        }
        let planned = SyncPlan.announce(plan, events: events)

        let earlier = BatchLedger.earlier(state: state, id: id)
        let listed = Set(found.files.map(\.relative))
        for gone in earlier.listed.keys.sorted() where !listed.contains(gone) && plan == nil {
            events(.leftOut("\(folder)/\(gone): no longer listed; the copy stays"))
        }
        let ledger = try BatchLedger(state: state, id: id, order: [])
        let tally = BatchTally(files: files.count, total: files.reduce(0) { $0 + ($1.size ?? 0) })
        var requests: [DownloadRequest] = []
        var chosen: [Int] = []  // the file of each request
        for (i, file) in files.enumerated() {
            let item = BatchFile(path: folder + "/" + file.relative, target: file.url)
            var download = request.template
            download.url = file.url
            download.outputPath = item.path
            download.listedSize = file.size
            switch decide(file, at: item.path, listed: earlier.listed[file.relative], planned: planned[file.relative]) {
            case .skip(let reason):
                events(.file(item, .skipped(reason: reason)))
                if let progress = tally.finished(i, size: Self.size(item.path), sent: false) { events(progress) }
                continue
            case .replace(let reason):
                download.force = true
                events(.file(item, .restarted(reason: reason)))
            case .fetch:
                break
            }
            if let sums, let location = request.checksumFile {
                download.expectedSHA256 = sums.sha256(for: file.relative)
                // The list itself, a file of the folder, is not said.
                if download.expectedSHA256 == nil, file.url != location {
                    events(.note(ChecksumFile.unlisted(file.relative, in: location)))
                }
            }
            requests.append(download)
            chosen.append(i)
        }
        let fetched = chosen
        let results = await client.downloadAll(requests, parallel: request.parallel, cancellation: cancellation) {
            j, event in
            let file = files[fetched[j]]
            let item = BatchFile(path: folder + "/" + file.relative, target: file.url)
            switch event {
            case .started: events(.file(item, .started))
            case .progress(let bytes, _, _): if let p = tally.moved(fetched[j], to: bytes) { events(p) }
            case .completed(_, let bytes, _):
                ledger.add(file.relative, listed: file.stamp)
                events(.file(item, .completed(bytes: bytes)))
                if let p = tally.finished(fetched[j], size: bytes, sent: true) { events(p) }
            default: events(.transfer(item, event))
            }
        }
        for case (let j, .failure(let error)) in results.enumerated() {
            let file = files[fetched[j]]
            let item = BatchFile(path: folder + "/" + file.relative, target: file.url)
            tally.failed(fetched[j], item, error)
            if case .stopped = error.code {} else { events(.file(item, .failed(error))) }
        }
        // Deletes only once every copy arrived: a run that failed or stopped leaves the extras to the next.
        if let plan, !cancellation.isStopped, !results.contains(where: { (try? $0.get()) == nil }) {
            for (k, action) in plan.actions.filter({ $0.kind == .delete }).enumerated() {
                let item = BatchFile(path: folder + "/" + action.path, target: request.url + action.path)
                do throws(TransferError) {
                    try SyncSides.deleteLocal(folder, action.path)
                    events(.file(item, .deleted))
                } catch {
                    tally.failed(files.count + k, item, error)
                    events(.file(item, .failed(error)))
                }
            }
            if request.sync?.delete == true { SyncSides.removeEmptyFolders(folder) }
        }
        return client.endBatch(record, ledger: ledger, tally: tally, stop: cancellation.reason)
    }

    /// `--checksum-file`, read once a run: a file, or over http(s) with the batch's headers.
    private func checksums(cancellation: Cancellation, events: @escaping @Sendable (BatchEvent) -> Void)
        async throws(TransferError) -> ChecksumFile?
    {
        guard let location = request.checksumFile else { return nil }
        let (client, headers) = (client, request.template.headers)
        let sums = try await onOwnThread { () throws(TransferError) in
            try client.checksumFile(location, headers: headers, cancellation: cancellation)
        }
        if let line = sums.skippedNote(location) { events(.note(line)) }
        return sums
    }

    /// `resumectl sync --dry-run` down: the plan alone, from the listing and the folder; nothing is written.
    func plan(cancellation: Cancellation, events: @escaping @Sendable (BatchEvent) -> Void) async throws(TransferError)
        -> SyncPlan
    {
        let found = try await onOwnThread { () throws(TransferError) in
            try self.walk(cancellation: cancellation, events: events)
        }
        for line in found.leftOut { events(.leftOut(line)) }
        return try syncPlan(found.files, complete: found.complete, write: false)
    }

    /// The listing against the folder (which, being the destination, may lack a subfolder it cannot read).
    private func syncPlan(_ files: [FolderWalk.File], complete: Bool, write: Bool) throws(TransferError)
        -> SyncPlan
    {
        let options = request.sync ?? SyncOptions()
        var source = files.map(\.syncFile)
        var local = try SyncSides.local(request.folder, source: Set(files.map(\.relative)))
        if options.checksum {
            if !Route.isS3(request.url) {
                SyncSides.reprDigests(
                    &source, urls: Dictionary(files.map { ($0.relative, $0.url) }, uniquingKeysWith: { a, _ in a }),
                    other: local, headers: try HeaderLines.parse(request.template.headers),
                    session: client.transport.makeSession(), settings: client.options.transport,
                    cancellation: Cancellation())
            }
            let state = client.store.state
            if write { try? state.make(state.batches) }
            try SyncSides.hash(
                &local, folder: request.folder, other: source, cache: (state.batches + "/\(request.id).sums", write))
        }
        return try SyncPlan(source: source, destination: local, sourceComplete: complete, options: options)
    }

    private enum Choice: Equatable {
        case fetch
        case skip(String)
        case replace(String)
    }

    /// What to do with a file the folder may hold already: a sync's plan decides; else one this batch fetched
    /// stays while the listing says what it said then; with `--skip-existing` any other stays when the sync
    /// rule (``SyncPlan/compare(_:_:_:)``) finds it alike; `--force` fetches everything; else a file there
    /// stays, as for a single download.
    private func decide(_ file: FolderWalk.File, at path: String, listed: String?, planned: SyncAction?) -> Choice {
        switch planned?.kind {
        case .keep?: return .skip(planned?.reason ?? "")
        case .replace?: return .replace(planned?.reason ?? "")
        case .copy?, .delete?: return .fetch
        case nil: break
        }
        var st = stat()
        guard lstat(path, &st) == 0, st.st_mode & S_IFMT == S_IFREG else { return .fetch }
        if request.template.force { return .replace("--force") }
        if let listed {
            return listed == file.stamp
                ? .skip("fetched earlier by this batch") : .replace("changed on the server since this batch fetched it")
        }
        guard request.skipExisting else {
            return .skip("already there (--skip-existing compares it with the listing, --force fetches it again)")
        }
        let here = SyncFile(path: file.relative, size: Int64(st.st_size), mtime: Int64(st.st_mtim.tv_sec))
        let verdict = SyncPlan.compare(file.syncFile, here, SyncOptions())
        return verdict.differs ? .replace(verdict.reason) : .skip(verdict.reason)
    }

    func walk(cancellation: Cancellation, events: @escaping @Sendable (BatchEvent) -> Void)
        throws(TransferError) -> FolderWalk
    {
        if case .s3Prefix = try Route(request.url) {
            return try S3Listing(
                request.url, s3: request.template.s3, answers: try client.requireS3Answers(),
                transport: client.transport,
                options: client.options
            ).walk(
                include: request.include, exclude: request.exclude, depth: request.depth,
                cancellation: cancellation, events: { _ in })
        }
        var headers = try HeaderLines.parse(request.template.headers)
        headers.set("Accept", "application/json, text/html;q=0.9, */*;q=0.1")
        let session = client.transport.makeSession()
        return try FolderWalk(
            root: request.url, depth: request.depth, include: request.include, exclude: request.exclude,
            html: client.htmlLinks
        ) {
            page throws(TransferError) in
            try client.fetchSmall(
                page, headers: headers, limit: FolderWalk.maxListingBytes, what: "list", session: session,
                cancellation: cancellation)
        }
    }

    /// Why the file at `relative` cannot be written below `folder` (a symbolic link on its way or in its
    /// place, a file where a folder must be), making its folders; nil when it can.
    static func refusal(_ folder: String, _ relative: String) -> String? {
        var path = folder
        for part in relative.split(separator: "/").dropLast() {
            path += "/" + part
            var st = stat()
            if lstat(path, &st) != 0 {
                guard mkdir(path, 0o755) == 0 || errno == EEXIST, lstat(path, &st) == 0 else {
                    return "cannot create \(path)"
                }
            }
            guard st.st_mode & S_IFMT == S_IFDIR else {
                return "\(path) is \(st.st_mode & S_IFMT == S_IFLNK ? "a symbolic link" : "no folder")"
            }
        }
        var st = stat()
        if lstat(folder + "/" + relative, &st) == 0, st.st_mode & S_IFMT == S_IFLNK {
            return "\(folder)/\(relative) is a symbolic link"
        }
        return nil
    }

    private static func size(_ path: String) -> Int64 {
        var st = stat()
        return stat(path, &st) == 0 ? Int64(st.st_size) : 0
    }
}
