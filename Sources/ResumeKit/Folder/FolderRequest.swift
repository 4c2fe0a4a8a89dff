/// What `resumectl download URL/ -o DIR` asks for: every file under a folder URL (a listing) or an S3
/// prefix into `folder`, keeping their relative paths, `parallel` at once, each as `template` describes a
/// single download (headers, `--on-change`, `--force`, S3 options).
public struct FolderRequest: Sendable, Equatable {
    /// An http(s) URL ending in `/`, or `s3://BUCKET/PREFIX/`.
    public var url: String
    public var folder: String
    public var template: DownloadRequest
    public var parallel: Int
    /// Subfolder levels to follow; nil for all, 0 for the folder's own files.
    public var depth: Int?
    /// Shell globs on the relative path: any of `include` (when given), none of `exclude`.
    public var include: [String]
    public var exclude: [String]
    /// Keep a file the folder holds with the listed size and time (or the listing's stamp from when this
    /// batch fetched it); fetch anew one that differs.
    public var skipExisting: Bool
    /// Set for `resumectl sync`: the folder's files follow the plan, and its extras may go.
    public var sync: SyncOptions?
    /// `--checksum-file`: a list of SHA-256 sums (a path or an http(s) URL), read once a run; each file is
    /// checked by its entry (``ChecksumFile/sha256(for:)`` of its path below the folder).
    public var checksumFile: String?

    public init(
        url: String, folder: String, template: DownloadRequest, parallel: Int = 4, depth: Int? = nil,
        include: [String] = [],
        exclude: [String] = [], skipExisting: Bool = false, sync: SyncOptions? = nil, checksumFile: String? = nil
    ) {
        self.sync = sync
        self.checksumFile = checksumFile
        self.url = url
        self.folder = folder
        self.template = template
        self.parallel = parallel
        self.depth = depth
        self.include = include
        self.exclude = exclude
        self.skipExisting = skipExisting
    }

    /// The batch's id: the same folder URL into the same folder is the same batch (never an upload's).
    public var id: String {
        "b-"
            + MessageDigest.hash(.sha256, Array("download\0\(url)\0".utf8) + Array(OutputPath.absolute(folder).utf8))
            .prefix(8).hex
    }

    /// Where a folder URL's files go when no folder is named: a folder of its name here (as a download is
    /// named after its URL), or here itself for an S3 prefix, as `aws s3 cp --recursive` would need it named.
    public static func defaultFolder(url: String) -> String {
        guard !Route.isS3(url), url.utf8.count > 1 else { return "." }
        let name = OutputPath.defaultName(url: String(url.dropLast()))
        return url.dropLast().contains("/") && !["", ".", "..", "index.html"].contains(name) && name.utf8.count < 256
            ? name : "."
    }
}
