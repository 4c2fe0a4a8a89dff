#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import FoundationEssentials
import NIOCore

/// The one owner of the folder where unfinished uploads live: `ROOT/.resumectl-uploads/`, mode
/// 0700, holding `<id>.json` (an ``UploadRecord``) and `<id>.data` (the bytes so far) per upload.
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

    /// Opens (creating if needed) the store of `root`.
    init(root: String) throws(ServeError) {
        self.root = root
        folder = SafePath.join(root, [Self.folderName])
        if mkdir(folder, 0o700) != 0 && errno != EEXIST {
            throw .uploadStoreUnavailable(path: folder, reason: String(cString: strerror(errno)))
        }
        chmod(folder, 0o700)
    }

    func dataPath(_ id: String) -> String { folder + "/" + id + ".data" }
    private func recordPath(_ id: String) -> String { folder + "/" + id + ".json" }

    /// A fresh upload id: 128 random bits in hex.
    static func newID() -> String {
        var random = SystemRandomNumberGenerator()
        return hex(random.next()) + hex(random.next())
    }

    private static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
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

    /// Writes `record` over its previous version: temp file, fsync, rename, fsync of the folder.
    func save(_ record: UploadRecord) throws(UploadFailure) {
        let bytes: Data
        do {
            bytes = try JSONEncoder().encode(record)
        } catch {
            throw UploadFailure(status: 500, "cannot encode the upload's record")
        }
        let final = recordPath(record.id)
        let temp = final + ".tmp"
        let fd = open(temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw UploadFailure(errno: errno, doing: "write the upload's record") }
        var ok = bytes.withUnsafeBytes { UploadData.writeAll(fd, $0, at: 0) } == nil
        ok = ok && fsync(fd) == 0
        let code = errno
        close(fd)
        guard ok, rename(temp, final) == 0 else {
            let failure = UploadFailure(errno: ok ? errno : code, doing: "write the upload's record")
            unlink(temp)
            throw failure
        }
        syncFolder(folder)
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

    /// Forgets an upload: its data, then its record.
    func remove(_ id: String) {
        unlink(dataPath(id))
        unlink(recordPath(id))
        unlink(recordPath(id) + ".tmp")
    }

    // MARK: Finishing

    /// Puts a complete upload's data at its destination: the record first says `finishing` (so a
    /// crash in between is finished at the next start), then the data is linked into place (replaced
    /// only when `replacing`), the destination folder synced, and the store forgets the upload.
    func finish(_ record: UploadRecord, replacing: Bool) throws(UploadFailure) {
        var record = record
        if record.phase != .finishing {
            record.phase = .finishing
            try save(record)
        }
        let destination: (folder: String, name: String)
        do {
            destination = try SafePath.uploadDestination(record.target, root: root)
        } catch {
            throw UploadFailure(error)
        }
        let final = SafePath.join(destination.folder, [destination.name])
        let data = dataPath(record.id)
        if replacing {
            guard rename(data, final) == 0 else { throw UploadFailure(errno: errno, doing: "rename") }
        } else if link(data, final) != 0 {
            // link(2) never replaces: a file that appeared since the upload began stays as it was.
            throw errno == EEXIST
                ? UploadFailure(status: 409, "a file exists there (serve with --overwrite to replace files)")
                : UploadFailure(errno: errno, doing: "link")
        }
        syncFolder(destination.folder)
        remove(record.id)
    }

    private func syncFolder(_ path: String) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        fsync(fd)
        close(fd)
    }

    // MARK: Start-up

    /// Reads every record at start: what can be continued is returned; what cannot (a record that
    /// does not parse, a plain upload, an expired one, data without a record) is removed with one log
    /// line each; data longer than its record is cut back; a finishing upload is finished.
    func recover(now: Int64, replacing: Bool, log: (String) -> Void) -> [UploadRecord] {
        var records: [UploadRecord] = []
        var dataIDs: Set<String> = []
        var recordIDs: [String] = []
        for name in Self.names(in: folder) {
            if name.hasSuffix(".tmp") {
                unlink(folder + "/" + name)
            } else if name.hasSuffix(".data") {
                dataIDs.insert(String(name.dropLast(5)))
            } else if name.hasSuffix(".json") {
                recordIDs.append(String(name.dropLast(5)))
            }
        }
        for id in recordIDs.sorted() {
            dataIDs.remove(id)
            if let record = recover(id, now: now, replacing: replacing, log: log) { records.append(record) }
        }
        for id in dataIDs.sorted() {
            unlink(dataPath(id))
            log("upload \(id): data without a record, removed")
        }
        return records
    }

    private func recover(_ id: String, now: Int64, replacing: Bool, log: (String) -> Void) -> UploadRecord? {
        guard let bytes = Self.contents(of: recordPath(id)),
            var record = try? JSONDecoder().decode(UploadRecord.self, from: bytes),
            record.version == 1, record.id == id, Self.isValidID(Substring(id)), !record.target.isEmpty
        else {
            remove(id)
            log("upload \(id): its record does not parse, removed")
            return nil
        }
        let name = "/" + record.target.joined(separator: "/")
        var info = stat()
        let size: Int64? = stat(dataPath(id), &info) == 0 ? Int64(info.st_size) : nil
        if record.kind == .plain {
            remove(id)
            log("upload \(name): a plain upload cannot be continued, removed")
            return nil
        }
        guard let size else {
            remove(id)
            log("upload \(name): its data is missing, removed")
            return nil
        }
        if record.phase == .finishing {
            do {
                try finish(record, replacing: replacing)
                log("upload \(name): finished after a restart")
                return nil
            } catch {
                log("upload \(name): cannot be finished (\(error.reason)), kept")
                return record
            }
        }
        if record.expires <= now {
            remove(id)
            log("upload \(name): expired, removed")
            return nil
        }
        if size > record.offset {
            truncate(dataPath(id), off_t(record.offset))
            log("upload \(name): \(size - record.offset) bytes past the durable offset \(record.offset) cut off")
        } else if size < record.offset {
            // Should never happen (the data is synced before its record); report only what is held.
            record.offset = size
            try? save(record)
            log("upload \(name): data shorter than its record, continuing from \(size)")
        }
        return record
    }

    private static func names(in folder: String) -> [String] {
        guard let dir = opendir(folder) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    private static func contents(of path: String) -> Data? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes = Data()
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count < 1 << 20 {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            bytes.append(contentsOf: chunk[0..<n])
        }
        return bytes
    }

    /// Removes the temp files an earlier release left beside upload destinations (`.NAME.upload-HEX`):
    /// it kept upload state in memory only, so nothing can ever complete them. Returns how many went.
    static func sweepLegacy(root: String) -> Int {
        var removed = 0
        var folders = [root]
        while let folder = folders.popLast() {
            for name in names(in: folder) where name != folderName {
                let path = folder + "/" + name
                var info = stat()
                guard lstat(path, &info) == 0 else { continue }
                if info.st_mode & S_IFMT == S_IFDIR {
                    folders.append(path)
                } else if info.st_mode & S_IFMT == S_IFREG, name.hasPrefix("."), name.contains(".upload-"), unlink(path) == 0 {
                    removed += 1
                }
            }
        }
        return removed
    }
}

/// An upload's open data file. Every method blocks.
struct UploadData: Sendable {
    let descriptor: Int32

    /// Writes `buffers` one after another from `offset`.
    func write(_ buffers: [ByteBuffer], at offset: Int64) throws(UploadFailure) {
        var position = offset
        for buffer in buffers {
            let failure = buffer.withUnsafeReadableBytes { Self.writeAll(descriptor, $0, at: position) }
            if let failure { throw UploadFailure(errno: failure, doing: "write") }
            position += Int64(buffer.readableBytes)
        }
    }

    /// Makes what was written durable.
    func sync() throws(UploadFailure) {
        guard fdatasync(descriptor) == 0 else { throw UploadFailure(errno: errno, doing: "fdatasync") }
    }

    func close() {
        _ = Glibc.close(descriptor)
    }

    /// pwrite(2) until done; the errno of a failure.
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64) -> Int32? {
        var done = 0
        while done < bytes.count {
            let n = pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done))
            if n < 0 {
                if errno == EINTR { continue }
                return errno
            }
            done += n
        }
        return nil
    }
}
