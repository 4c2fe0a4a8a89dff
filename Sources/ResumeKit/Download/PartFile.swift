import Glibc
import SystemPackage
import Synchronization

/// The `.part` file a download writes into. `committed` counts the bytes known to be on disk (fsynced);
/// only that number ever goes into a token. Past the first MiB the body goes through a `WriteGatherer`;
/// small files never allocate one. Its `flock` keeps a second writer out, whatever its state folder.
final class PartFile {
    let path: String
    private let fd: FileDescriptor
    /// Bytes handed to the file with `pwrite`.
    private(set) var written: Int64
    private(set) var committed: Int64
    private var gatherer: WriteGatherer?
    static let gatherAfter: Int64 = 1 << 20

    /// Bytes received, whether written to the file yet or still gathered.
    var length: Int64 { written + Int64(gatherer?.count ?? 0) }

    /// Another download writes this file: its `.part`'s lock says so.
    struct Busy: Error {
        let pid: Int32?

        /// The refusal a download that meets it ends with.
        var refusal: TransferError {
            TransferError(.busy, "\(TokenLock.Failure.held(pid: pid)); not starting a second one")
        }
    }

    /// Opens (creating) `path`, takes its `flock` (one writer at a time), and cuts it to `keeping` bytes:
    /// anything after the last commit is an unflushed tail or garbage.
    init(path: String, keeping: Int64) throws {
        self.path = path
        fd = try FileDescriptor.open(
            FilePath(path), .readWrite, options: [.create, .closeOnExec],
            permissions: [.ownerReadWrite, .groupRead, .otherRead])
        guard flock(fd.rawValue, LOCK_EX | LOCK_NB) == 0 else {
            let holder = TokenLock.flockHolder(of: fd.rawValue)
            try? fd.close()
            throw Busy(pid: holder)
        }
        let size: Int64
        do { size = try fd.seek(offset: 0, from: .end) } catch {
            try? fd.close()
            throw error
        }
        let keep = min(size, keeping)
        written = keep
        committed = keep
        if size != keep { try truncate(to: keep) }
    }

    /// Creates `path`, which must not exist yet, and takes its `flock`: a `.part` that is there already
    /// belongs to an earlier run (or another process) and is left to the path that continues it.
    init(creating path: String) throws {
        self.path = path
        fd = try FileDescriptor.open(
            FilePath(path), .readWrite, options: [.create, .exclusiveCreate, .closeOnExec],
            permissions: [.ownerReadWrite, .groupRead, .otherRead])
        guard flock(fd.rawValue, LOCK_EX | LOCK_NB) == 0 else {
            try? fd.close()
            throw Busy(pid: nil)
        }
        written = 0
        committed = 0
    }

    /// ``init(path:keeping:)`` failing as a download does: another writer is `busy`, anything else 73.
    static func opening(_ path: String, keeping: Int64, tokenID: String? = nil) throws(TransferError) -> PartFile {
        do { return try PartFile(path: path, keeping: keeping) } catch let busy as Busy { throw busy.refusal } catch {
            throw TransferError(.cannotCreateOutput, "cannot open \(path): \(error)", tokenID: tokenID)
        }
    }

    private var isOpen = true

    deinit { close() }

    /// For syncing from another thread; the descriptor stays open as long as this object. Only the
    /// first `written` bytes are in the file: `flush()` first.
    var fileDescriptor: Int32 { fd.rawValue }

    func truncate(to offset: Int64) throws {
        try flush()
        try fd.resize(to: offset)
        written = offset
        committed = min(committed, offset)
    }

    func append(_ bytes: UnsafeRawBufferPointer) throws {
        if gatherer == nil, written >= Self.gatherAfter { gatherer = WriteGatherer() }
        if let gatherer {
            written += Int64(try gatherer.append(bytes, to: fd.rawValue, at: written))
        } else {
            try fd.writeAll(toAbsoluteOffset: written, bytes)
            written += Int64(bytes.count)
        }
    }

    /// Writes what is gathered to the file (on a failure the gathered bytes are dropped: see `WriteGatherer`).
    func flush() throws {
        if let gatherer { written += Int64(try gatherer.write(to: fd.rawValue, at: written)) }
    }

    /// Makes everything received so far durable. Nothing written since the last sync needs none: a missing or
    /// longer file is cut back to `committed` anyway.
    func sync() throws {
        try flush()
        guard written != committed else { return }
        if fdatasync(fd.rawValue) != 0 { throw Errno(rawValue: errno) }
        committed = written
    }

    /// Reads up to `buffer.count` bytes at `offset` (for hashing data already on disk).
    func read(at offset: Int64, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        try flush()
        return try fd.read(fromAbsoluteOffset: offset, into: buffer)
    }

    /// Closes once; a second close could hit a descriptor number another thread has been given since.
    /// Bytes still gathered are dropped: they were never committed.
    func close() {
        guard isOpen else { return }
        isOpen = false
        gatherer = nil
        try? fd.close()
    }
}
