/// The objects under an S3 prefix (ListObjectsV2, every page) as a folder download's files: each key less
/// the prefix becomes a path below the folder. A key that would leave the folder (`..`, an absolute or
/// empty path) is refused, with a line each.
struct S3Listing {
    let url: String
    let location: S3Location
    let target: S3Target
    let call: S3Call
    let session: any TransportSession
    /// The transfer's options: the retry rules a page is asked again under.
    let options: TransferOptions

    init(_ url: String, s3: S3Options, answers: any S3Answers, transport: any HTTPTransport, options: TransferOptions)
        throws(TransferError)
    {
        location = try S3Location.parse(url)
        target = try S3Target(location, choices: s3.choices, forcePathStyle: s3.forcePathStyle)
        call = S3Call(answers: answers, settings: target.signing(options.transport))
        session = transport.makeSession()
        self.url = url
        self.options = options
    }

    /// Every object under the prefix. One attempt a page: a page that fails is asked again; the pages before it are
    /// kept.
    func objects(cancellation: Cancellation, events: @escaping EventHandler) throws(TransferError) -> [S3Object] {
        var objects: [S3Object] = []
        var continuation: String?
        repeat {
            var query = [("list-type", "2"), ("prefix", location.key)]
            if let continuation { query.append(("continuation-token", continuation)) }
            let pageURL = target.url(key: "", query: query)
            let body = try Retrier.run(
                options, cancellation: cancellation, events: events,
                fresh: { RetryRules.isFresh(held: Int64(objects.count), known: false) },
                stopped: "stopped while listing \(url)"
            ) { () throws(TransferError) in
                switch call.send(session, method: "GET", url: pageURL, cancellation: cancellation) {
                case .ok(_, let body):
                    return .done(body)
                case .refused(let status, let error, let after)
                where RetryPolicy.isRetryable(status: status, errorCode: error?.code):
                    return .failed(
                        .status(status, retryAfter: after, message: S3Call.failure(status, error, "cannot list \(url)"))
                    )
                case .refused(let status, let error, _):
                    throw TransferError(.failed, S3Call.failure(status, error, "cannot list \(url)"), status: status)
                case .lost(let lost):
                    return .failed(lost.withMessage("cannot list \(url): \(lost.message)"))
                case .stopped:
                    throw TransferError(.stopped(cancellation.reason ?? .interrupt), "stopped while listing \(url)")
                }
            }
            let page = try call.answers.objects(body)
            objects += page.objects
            continuation = page.continuation
        } while continuation != nil
        return objects
    }

    /// The objects as a folder download's files (see above).
    func walk(
        include: [String], exclude: [String], depth: Int?, cancellation: Cancellation, events: @escaping EventHandler
    )
        throws(TransferError) -> FolderWalk
    {
        var files: [FolderWalk.File] = []
        var leftOut: [String] = []
        for object in try objects(cancellation: cancellation, events: events) where !object.key.hasSuffix("/") {
            guard let relative = Self.relativePath(String(object.key.dropFirst(location.key.count))) else {
                leftOut.append("s3://\(location.bucket)/\(object.key): skipped, its key would leave the folder")
                continue
            }
            guard depth.map({ relative.split(separator: "/").count <= $0 + 1 }) ?? true,
                FolderWalk.wanted(relative, include: include, exclude: exclude)
            else { continue }
            // Whole seconds: ISO 8601 as ListObjectsV2 writes it, its fraction dropped.
            let mtime = object.lastModified.flatMap { ISOTime.date(String($0.prefix(19)) + "Z") }.map {
                Int64($0.timeIntervalSince1970)
            }
            files.append(
                FolderWalk.File(
                    relative: relative, url: "s3://\(location.bucket)/\(object.key)", size: object.size, mtime: mtime,
                    stamp: "\(object.size) \(object.etag)", hashes: Self.hashes(etag: object.etag)))
        }
        return try FolderWalk(files: files, leftOut: leftOut)
    }

    /// What an ETag says of the content: a single-part upload's is its MD5 (a multipart one's ends in `-N`).
    static func hashes(etag: String) -> [String: String] {
        let tag = etag.filter { $0 != "\"" }.lowercased()
        return tag.count == 32 && tag.allSatisfy(\.isHexDigit) ? ["md5": tag] : [:]
    }

    /// A key's path below the download folder, or nil when it would leave it.
    static func relativePath(_ key: String) -> String? {
        let parts = key.split(separator: "/", omittingEmptySubsequences: false)
        guard !parts.isEmpty, parts.allSatisfy({ !$0.isEmpty && $0 != "." && $0 != ".." }), !key.utf8.contains(0) else {
            return nil
        }
        return key
    }
}
