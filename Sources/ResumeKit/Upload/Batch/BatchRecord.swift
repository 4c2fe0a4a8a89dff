import FoundationEssentials

/// What a batch is, as `STATE/batches/<id>.json` keeps it (mode 0600, written durably before any byte is
/// sent): enough for `resume b-…` to run the same command again. Like a token, it never holds a secret.
public struct BatchRecord: Codable, Sendable, Equatable {
    public static let currentVersion = 1

    public struct S3: Codable, Sendable, Equatable {
        public var profile: String?
        public var region: String?
        public var endpoint: String?
        public var pathStyle: Bool?
        public var partSize: Int64?
        public var checksum: S3Checksum?

        init(_ o: S3Options) {
            (profile, region, endpoint) = (o.choices.profile, o.choices.region, o.choices.endpoint)
            (pathStyle, partSize, checksum) = (o.forcePathStyle ? true : nil, o.partSize, o.checksum)
        }
    }

    /// A folder download's choices besides the folder, the URL and the S3 ones.
    public struct Download: Codable, Sendable, Equatable {
        public var depth: Int?
        public var include: [String]
        public var exclude: [String]
        public var onChange: String
        public var force: Bool
        /// `--checksum-file`: an absolute path or an http(s) URL, read again by every run of the batch.
        public var checksumFile: String?
    }

    public var version: Int
    public var id: String
    /// The folder, absolute.
    public var folder: String
    /// Where the files go (an upload), or where they come from (a download).
    public var target: String
    /// Set for a folder download.
    public var download: Download?
    /// `ietf`, `tus` or `plain` once found (once per batch); nil before, and for S3.
    public var `protocol`: String?
    public var interopVersion: Int?
    public var chunkSize: Int64?
    public var parallel: Int
    public var followSymlinks: Bool
    public var skipExisting: Bool
    /// Set for a sync.
    public var sync: SyncOptions?
    public var headers: [String]
    public var s3: S3?
    public var createdAt: Date

    private init(
        id: String, folder: String, target: String, parallel: Int, skipExisting: Bool, headers: [String], s3: S3Options
    ) {
        version = Self.currentVersion
        self.id = id
        self.folder = OutputPath.absolute(folder)
        self.target = target
        self.parallel = parallel
        followSymlinks = false
        self.skipExisting = skipExisting
        self.headers = Redact.storableHeaders(headers)
        self.s3 = Route.isS3(target) ? S3(s3) : nil
        createdAt = Date()
    }

    init(_ request: BatchRequest) {
        let u = request.upload
        self.init(
            id: request.id, folder: request.folder, target: request.target, parallel: request.parallel,
            skipExisting: request.skipExisting, headers: u.headers, s3: u.s3)
        `protocol` = u.uploadProtocol == .auto ? nil : u.uploadProtocol.rawValue
        interopVersion = u.interopVersion?.rawValue
        chunkSize = u.chunkSize
        followSymlinks = request.followSymlinks
        sync = request.sync
    }

    init(_ request: FolderRequest) {
        let t = request.template
        self.init(
            id: request.id, folder: request.folder, target: request.url, parallel: request.parallel,
            skipExisting: request.skipExisting, headers: t.headers, s3: t.s3)
        download = Download(
            depth: request.depth, include: request.include, exclude: request.exclude, onChange: t.onChange.rawValue,
            force: t.force,
            checksumFile: request.checksumFile.map {
                $0.hasPrefix("http://") || $0.hasPrefix("https://") ? $0 : OutputPath.absolute($0)
            })
        sync = request.sync
    }

    /// The folder download this record describes, with `headers` given now joining the kept ones.
    func folderRequest(headers given: [String]) -> FolderRequest? {
        guard let download else { return nil }
        let template = DownloadRequest(
            url: target, headers: HeaderLines.merge(stored: headers, given: given),
            onChange: DownloadStateMachine.OnChange(rawValue: download.onChange) ?? .restart, force: download.force,
            s3: s3Options)
        return FolderRequest(
            url: target, folder: folder, template: template, parallel: parallel, depth: download.depth,
            include: download.include, exclude: download.exclude, skipExisting: skipExisting, sync: sync,
            checksumFile: download.checksumFile)
    }

    private var s3Options: S3Options {
        guard let s3 else { return S3Options() }
        return S3Options(
            choices: S3Choices(profile: s3.profile, region: s3.region, endpoint: s3.endpoint),
            forcePathStyle: s3.pathStyle ?? false, partSize: s3.partSize, checksum: s3.checksum ?? .crc32c)
    }

    /// The request that runs this batch again; `headers` given now join the kept ones (logins are never kept).
    func request(headers given: [String]) -> BatchRequest {
        let upload = UploadRequest(
            filePath: folder, url: target, headers: HeaderLines.merge(stored: headers, given: given),
            interopVersion: interopVersion.flatMap(InteropVersion.init), chunkSize: chunkSize,
            uploadProtocol: `protocol`.flatMap(UploadProtocolChoice.init) ?? .auto, s3: s3Options)
        return BatchRequest(
            folder: folder, target: target, upload: upload, parallel: parallel, followSymlinks: followSymlinks,
            skipExisting: skipExisting, sync: sync)
    }
}
