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
    }

    public var version: Int
    public var id: String
    /// The folder, absolute.
    public var folder: String
    public var target: String
    /// `ietf`, `tus` or `plain` once found (once per batch); nil before, and for S3.
    public var `protocol`: String?
    public var interopVersion: Int?
    public var chunkSize: Int64?
    public var parallel: Int
    public var followSymlinks: Bool
    public var skipExisting: Bool
    public var headers: [String]
    public var s3: S3?
    public var createdAt: Date

    init(_ request: BatchRequest) {
        version = Self.currentVersion
        id = request.id
        folder = OutputPath.absolute(request.folder)
        target = request.target
        let u = request.upload
        `protocol` = u.uploadProtocol == .auto ? nil : u.uploadProtocol.rawValue
        interopVersion = u.interopVersion?.rawValue
        chunkSize = u.chunkSize
        parallel = request.parallel
        followSymlinks = request.followSymlinks
        skipExisting = request.skipExisting
        headers = ResumeToken.storableHeaders(u.headers)
        s3 = Route.isS3(request.target)
            ? S3(profile: u.s3.choices.profile, region: u.s3.choices.region, endpoint: u.s3.choices.endpoint,
                pathStyle: u.s3.forcePathStyle ? true : nil, partSize: u.s3.partSize, checksum: u.s3.checksum)
            : nil
        createdAt = Date()
    }

    /// The request that runs this batch again; `headers` given now join the kept ones (logins are never kept).
    func request(headers given: [String]) -> BatchRequest {
        var s3Options = S3Options()
        if let s3 {
            s3Options = S3Options(choices: S3Choices(profile: s3.profile, region: s3.region, endpoint: s3.endpoint),
                forcePathStyle: s3.pathStyle ?? false, partSize: s3.partSize, checksum: s3.checksum ?? .crc32c)
        }
        let upload = UploadRequest(
            filePath: folder, url: target, headers: HeaderLines.merge(stored: headers, given: given),
            interopVersion: interopVersion.flatMap(InteropVersion.init), chunkSize: chunkSize,
            uploadProtocol: `protocol`.flatMap(UploadProtocolChoice.init) ?? .auto, s3: s3Options)
        return BatchRequest(folder: folder, target: target, upload: upload, parallel: parallel, followSymlinks: followSymlinks,
            skipExisting: skipExisting)
    }

    /// The record as `show` prints it.
    public var json: String { String(decoding: (try? TokenStore.encoder.encode(self)) ?? Data(), as: UTF8.self) }
}
