import Glibc
import FoundationEssentials
import NIOCore
import ResumeKit

/// The one owner of the folder where unfinished uploads live: `ROOT/.resumectl-uploads/`, mode
/// 0700, holding `<id>.json` (an ``UploadRecord``) and `<id>.data` (the bytes so far) per upload;
/// once its file is in place, only `<id>.done` (the record) until it expires, for its URL to answer.
///
/// A dot name: never listed, never served, never an upload target (``SafePath`` refuses dot names).
/// Records are written as the client writes its tokens — temp file, fsync, rename, fsync of the
/// folder — so a crash leaves the old record or the new one whole. Every method blocks; the handlers
/// call them on the thread pool.
struct UploadStore: Sendable {
    static let folderName = ".resumectl-uploads"

    /// Canonical path of the served folder.
    let root: String
    let folder: String
    /// Times each durable write, counts finished uploads.
    let metrics: ServerMetrics?
    /// `--on-upload-complete`: told of every file put in place.
    let hooks: HookRunner?
    /// What the uploads' bodies hold in memory, all together.
    let bodyMemory: BodyMemory

    /// Opens (creating if needed) the store of `root`.
    init(root: String, metrics: ServerMetrics? = nil, hooks: HookRunner? = nil, bodyMemory: BodyMemory = BodyMemory())
        throws(ServeError)
    {
        self.root = root
        self.metrics = metrics
        self.hooks = hooks
        self.bodyMemory = bodyMemory
        folder = SafePath.join(root, [Self.folderName])
        if mkdir(folder, 0o700) != 0 && errno != EEXIST {
            throw .uploadStoreUnavailable(path: folder, reason: String(cString: strerror(errno)))
        }
        chmod(folder, 0o700)
    }

    func dataPath(_ id: String) -> String { folder + "/" + id + ".data" }
    func recordPath(_ id: String) -> String { folder + "/" + id + ".json" }

    /// A fresh upload id: 128 random bits in hex.
    static func newID() -> String {
        var random = SystemRandomNumberGenerator()
        return withUnsafeBytes(of: (random.next(), random.next()) as (UInt64, UInt64)) { Array($0) }.hex
    }

    /// Whether `id` could name an upload (so a request path never reaches the file system otherwise).
    static func isValidID(_ id: Substring) -> Bool {
        id.utf8.count == 32 && id.utf8.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) }
    }

    // MARK: Records and data

    /// Creates the empty data file and the record of a new upload, durably, before anyone hears of it.
    func create(_ record: UploadRecord) throws(UploadFailure) {
        let fd = open(dataPath(record.id), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw UploadFailure(errno: errno, doing: "create the upload's data") }
        close(fd)
        try save(record)
    }

    /// Writes `record` over its previous version (``write(_:to:folder:)``).
    func save(_ record: UploadRecord) throws(UploadFailure) {
        guard let bytes = try? JSONEncoder().encode(record) else {
            throw UploadFailure(status: 500, "cannot encode the upload's record")
        }
        if let code = Self.write(bytes, to: recordPath(record.id), folder: folder) {
            throw UploadFailure(errno: code, doing: "write the upload's record")
        }
    }

    /// Puts `bytes` at `path` (in `folder`) whole or not at all: temp file, fsync, rename, fsync of the folder.
    /// The errno of a failure.
    static func write(_ bytes: Data, to path: String, folder: String) -> Int32? {
        let temp = path + ".tmp"
        let fd = open(temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return errno }
        var failure = bytes.withUnsafeBytes { UploadData.writeAll(fd, $0, at: 0) }
        if failure == nil && fsync(fd) != 0 { failure = errno }
        close(fd)
        if failure == nil && rename(temp, path) != 0 { failure = errno }
        guard failure == nil else {
            unlink(temp)
            return failure
        }
        syncFolder(folder)
        return nil
    }

    /// Makes the bytes written to `data` durable, then `record` (whose offset counts them): the one
    /// durability point of an upload in progress, timed for the metrics.
    func persist(_ data: UploadData?, _ record: UploadRecord) throws(UploadFailure) {
        let start = ContinuousClock.now
        try data?.sync()
        try save(record)
        let (seconds, attoseconds) = (ContinuousClock.now - start).components
        metrics?.durableSync.observe(Double(seconds) + Double(attoseconds) / 1e18)
    }

    /// Opens the data file for appending at `offset`; the bytes past it (never reported) are cut off.
    func openData(_ id: String, at offset: Int64) throws(UploadFailure) -> UploadData {
        let fd = open(dataPath(id), O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { throw UploadFailure(errno: errno, doing: "open the upload's data") }
        if ftruncate(fd, off_t(offset)) != 0 {
            let code = errno
            close(fd)
            throw UploadFailure(errno: code, doing: "truncate the upload's data")
        }
        return UploadData(descriptor: fd)
    }

    /// Where a finished upload's record stays until it expires, so that its URL still answers after a
    /// restart; a name the recovery of earlier releases never reads.
    func donePath(_ id: String) -> String { folder + "/" + id + ".done" }

    /// Forgets an upload: its data, then its record (or, once finished, what is left of it).
    func remove(_ id: String) {
        unlink(dataPath(id))
        unlink(recordPath(id))
        unlink(recordPath(id) + ".tmp")
        unlink(donePath(id))
    }

    // MARK: Finishing

    /// Puts a complete upload's data at its destination: the record first says `finishing` (so a
    /// crash in between is finished at the next start), then the data is linked into place (replaced
    /// only when `replacing`), the destination folder synced, the completion hook made due (durably,
    /// before the upload's record says it is done: a crash in between runs it at the next start), and
    /// the record becomes `<id>.done`. A finishing upload whose data is gone but whose destination is
    /// there was renamed into place (`--overwrite`) or finished before a crash: only the rest is done.
    func finish(_ record: UploadRecord, replacing: Bool) throws(UploadFailure) {
        if record.concat == .partial {
            // A tus partial upload is no file: its data stays beside its record, for final uploads, until it expires.
            rename(recordPath(record.id), donePath(record.id))
            return
        }
        let retrying = record.phase == .finishing
        var record = record
        if record.phase != .finishing {
            record.phase = .finishing
            try save(record)
        }
        let destination: (folder: CInt, name: String)
        do {
            destination = try SafePath.uploadDestination(record.target, root: root)
        } catch {
            throw UploadFailure(error)
        }
        // Relative to the destination's descriptor from here on: a folder on the way swapped for a link
        // since it was opened cannot send the file elsewhere.
        let (folderFD, name) = destination
        defer { close(folderFD) }
        let final = SafePath.join(root, record.target)
        let data = dataPath(record.id)
        if retrying && access(data, F_OK) != 0 && faccessat(folderFD, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0 {
            // Renamed into place (--overwrite), or its data unlinked, before a crash: only the rest is left to do.
        } else if replacing {
            guard renameat(AT_FDCWD, data, folderFD, name) == 0 else {
                throw UploadFailure(errno: errno, doing: "rename")
            }
        } else if linkat(AT_FDCWD, data, folderFD, name, 0) != 0 {
            // link(2) never replaces: a file that appeared since the upload began stays as it was
            // (unless it is this upload's own link, made before a crash).
            let code = errno
            guard code == EEXIST, Self.sameFile(data, folderFD, name) else {
                throw code == EEXIST
                    ? UploadFailure(status: 409, "a file exists there (serve with --overwrite to replace files)")
                    : UploadFailure(errno: code, doing: "link")
            }
        }
        fsync(folderFD)
        let due = hooks?.makeDue(record, path: final)
        unlink(data)
        rename(recordPath(record.id), donePath(record.id))
        metrics?.uploadFinished(record.kind)
        if let due { hooks?.run(due) }
    }

    /// tus concatenation: the partial uploads' data, in order, into the final upload's own, made durable
    /// with its record, which then says every byte is there (only from then on does a start finish it
    /// rather than remove it), and finished.
    func concatenate(_ record: UploadRecord, parts: [UploadRecord], replacing: Bool) throws(UploadFailure)
        -> UploadRecord
    {
        try create(record)
        var done = record
        done.offset = record.length ?? 0
        do throws(UploadFailure) {
            let data = try openData(record.id, at: 0)
            defer { data.close() }
            for part in parts {
                let fd = open(dataPath(part.id), O_RDONLY | O_CLOEXEC)
                guard fd >= 0 else { throw UploadFailure(status: 410, "a partial upload is gone") }
                defer { close(fd) }
                try data.append(from: fd, count: part.length ?? 0)
            }
            try persist(data, done)
            try finish(done, replacing: replacing)
        } catch {
            remove(record.id)
            throw error
        }
        return done
    }

    private static func sameFile(_ path: String, _ folder: CInt, _ name: String) -> Bool {
        var first = stat()
        var second = stat()
        return stat(path, &first) == 0 && fstatat(folder, name, &second, AT_SYMLINK_NOFOLLOW) == 0
            && first.st_dev == second.st_dev && first.st_ino == second.st_ino
    }

    static func syncFolder(_ path: String) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        fsync(fd)
        close(fd)
    }
}
