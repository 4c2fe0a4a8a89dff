import Glibc

/// What `resumectl upload DIR TARGET/` asks for: every regular file under `folder` to `target` plus its
/// path relative to the folder, `parallel` files at once, each as `upload` describes a single file. The files
/// share `parallel` requests in flight (a small file's one, each S3 part), as one file's parts do alone: a fault
/// loses at most that many S3 parts.
public struct BatchRequest: Sendable, Equatable {
    public var folder: String
    /// `s3://BUCKET/PREFIX/`, or an http(s) URL ending in `/`.
    public var target: String
    /// The template of every file's upload: headers, protocol choice, chunk size, S3 options.
    public var upload: UploadRequest
    public var parallel: Int
    /// `-L`: follow symbolic links (to files and folders) instead of skipping them.
    public var followSymlinks: Bool
    /// Skip a file the target already holds with the same size and checksum.
    public var skipExisting: Bool
    /// Set for `resumectl sync`: the target's files follow the plan, and its extras may go.
    public var sync: SyncOptions?

    public init(
        folder: String, target: String, upload: UploadRequest, parallel: Int = 4, followSymlinks: Bool = false,
        skipExisting: Bool = false, sync: SyncOptions? = nil
    ) {
        self.sync = sync
        self.folder = folder
        self.target = target
        self.upload = upload
        self.parallel = parallel
        self.followSymlinks = followSymlinks
        self.skipExisting = skipExisting
    }

    /// The batch's id: the same folder to the same target is the same batch, so the command run again continues it.
    public var id: String {
        "b-"
            + MessageDigest.hash(.sha256, Array(target.utf8) + [0] + Array(OutputPath.absolute(folder).utf8)).prefix(8)
            .hex
    }

    /// True when `path` is a folder (following links): `upload` then sends it as a batch.
    public static func isFolder(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && st.st_mode & S_IFMT == S_IFDIR
    }
}
