import Glibc
import SystemPackage

/// The `.part` file a download writes into. `committed` counts the bytes known to be on disk (fsynced);
/// only that number ever goes into a token.
final class PartFile {
    let path: String
    private let fd: FileDescriptor
    private(set) var length: Int64
    private(set) var committed: Int64

    /// Another process writes this `.part` file.
    struct Busy: Error {
        let pid: Int32?
    }

    /// Opens (creating) `path`, takes its `flock` (one writer at a time), and cuts it to `keeping` bytes:
    /// anything after the last commit is an unflushed tail or garbage. A file shorter than `keeping`
    /// keeps what it has.
    init(path: String, keeping: Int64) throws {
        self.path = path
        fd = try FileDescriptor.open(
            FilePath(path), .readWrite, options: [.create, .closeOnExec], permissions: [.ownerReadWrite, .groupRead, .otherRead])
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
        length = keep
        committed = keep
        if size != keep { try truncate(to: keep) }
    }

    private var isOpen = true

    deinit { close() }

    /// For syncing from another thread; the descriptor stays open as long as this object.
    var fileDescriptor: Int32 { fd.rawValue }

    func truncate(to offset: Int64) throws {
        try fd.resize(to: offset)
        length = offset
        committed = min(committed, offset)
    }

    func append(_ bytes: UnsafeRawBufferPointer) throws {
        try fd.writeAll(toAbsoluteOffset: length, bytes)
        length += Int64(bytes.count)
    }

    /// Makes everything written so far durable and returns the new committed length.
    @discardableResult
    func sync() throws -> Int64 {
        if fdatasync(fd.rawValue) != 0 { throw Errno(rawValue: errno) }
        committed = length
        return committed
    }

    /// Reads `count` bytes at `offset` (for hashing data already on disk).
    func read(at offset: Int64, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        try fd.read(fromAbsoluteOffset: offset, into: buffer)
    }

    /// Closes once; a second close could hit a descriptor number another thread has been given since.
    func close() {
        guard isOpen else { return }
        isOpen = false
        try? fd.close()
    }
}
