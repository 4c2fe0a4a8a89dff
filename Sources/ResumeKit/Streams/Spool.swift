import Glibc
import SystemPackage

/// The bytes of a streamed upload (stdin) kept on disk until the server has acknowledged them, so that a
/// cut, a stall or a 5xx is survived by sending them again — a pipe cannot be rewound.
///
/// Offsets are stream offsets: byte N of the stream is at offset N of the file. Acknowledged bytes are given
/// back with ``punch(fd:path:from:to:)`` and ``markDropped(below:)`` (a hole: the blocks are freed, the
/// offsets stay), so the disk use is what is still held. The token records bytes before they are sent,
/// by checksum; it counts on the file only for ``synced`` ones (fsynced), and ``reopen(path:start:synced:)``
/// cuts the file back to them: what a power loss may have taken comes again from a replayed stream.
final class Spool {
    let path: String
    private let fd: FileDescriptor
    private var isOpen = true
    /// The first byte still held; everything below was dropped.
    private(set) var start: Int64
    /// One past the last byte appended.
    private(set) var end: Int64
    /// Bytes known to be on disk.
    private(set) var synced: Int64

    /// For request bodies read straight from the spool (`pread` by stream offset).
    var fileDescriptor: Int32 { fd.rawValue }

    /// Bytes held, and so (with hole punching) the spool's disk use.
    var held: Int64 { end - start }

    private init(path: String, fd: FileDescriptor, start: Int64, end: Int64) {
        self.path = path
        self.fd = fd
        self.start = start
        self.end = end
        self.synced = end
    }

    deinit { close() }

    /// A new, empty spool (mode 0600); an old file of that name is replaced.
    static func create(path: String) throws(TransferError) -> Spool {
        do {
            let fd = try FileDescriptor.open(
                FilePath(path), .readWrite, options: [.create, .truncate, .closeOnExec], permissions: [.ownerReadWrite])
            return Spool(path: path, fd: fd, start: 0, end: 0)
        } catch {
            throw Self.failure("cannot create the spool", path, error)
        }
    }

    /// The spool a token describes: `start` and `synced` as recorded. Bytes after `synced` (or `start`, when
    /// the server acknowledged more than was synced) may not have survived and are cut off; a file shorter
    /// than `synced` lost fsynced data, which makes it unusable. A spool that relied on nothing (every synced
    /// byte acknowledged) and is gone (its creation never reached the disk before a power loss) is made anew.
    static func reopen(path: String, start: Int64, synced: Int64) throws(TransferError) -> Spool {
        let kept = max(start, synced)
        let fd: FileDescriptor
        do {
            fd = try FileDescriptor.open(FilePath(path), .readWrite, options: [.closeOnExec])
        } catch Errno.noSuchFileOrDirectory where synced <= start {
            do {
                fd = try FileDescriptor.open(
                    FilePath(path), .readWrite, options: [.create, .exclusiveCreate, .closeOnExec],
                    permissions: [.ownerReadWrite])
            } catch {
                throw Self.failure("cannot create the spool", path, error)
            }
        } catch {
            throw Self.failure("cannot open the spool", path, error)
        }
        do {
            let size = try fd.seek(offset: 0, from: .end)
            guard size >= synced else {
                try? fd.close()
                throw TransferError(
                    .badToken, "the spool \(path) holds \(size) bytes, fewer than the \(synced) its token recorded")
            }
            // Below `start` only holes are kept: the server holds those bytes.
            if size != kept { try fd.resize(to: kept) }
        } catch let error as TransferError {
            throw error
        } catch {
            try? fd.close()
            throw Self.failure("cannot read the spool", path, error)
        }
        return Spool(path: path, fd: fd, start: start, end: kept)
    }

    /// Appends stream bytes at ``end``.
    func append(_ bytes: UnsafeRawBufferPointer) throws(TransferError) {
        do {
            try fd.writeAll(toAbsoluteOffset: end, bytes)
        } catch {
            throw Self.failure("cannot write the spool", path, error)
        }
        end += Int64(bytes.count)
    }

    /// Makes every appended byte durable; returns the new ``synced``.
    @discardableResult
    func sync() throws(TransferError) -> Int64 {
        guard synced < end else { return synced }
        if fdatasync(fd.rawValue) != 0 { throw Self.failure("cannot sync the spool", path, Errno(rawValue: errno)) }
        synced = end
        return synced
    }

    /// Reads held bytes at stream offset `offset` (at least ``start``); returns how many were read.
    func read(at offset: Int64, into buffer: UnsafeMutableRawBufferPointer) throws(TransferError) -> Int {
        precondition(offset >= start, "spool bytes below \(start) were dropped")
        let count = Int(min(Int64(buffer.count), max(0, end - offset)))
        guard count > 0 else { return 0 }
        do {
            return try fd.read(
                fromAbsoluteOffset: offset, into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<count]))
        } catch {
            throw Self.failure("cannot read the spool", path, error)
        }
    }

    /// Records that the bytes below `offset` were given back by ``punch(fd:path:from:to:)`` (the server
    /// holds them now); the caller records the new ``start`` in its token first.
    func markDropped(below offset: Int64) {
        start = max(start, min(offset, end))
    }

    /// Frees the blocks of `[from, to)` of a spool's descriptor (a hole: the offsets stay); it needs no lock
    /// (appends go past `to`), so the stream's other threads need not wait for a slow TRIM.
    static func punch(fd: Int32, path: String, from: Int64, to: Int64) throws(TransferError) {
        guard to > from, punchHole(fd, offset: from, length: to - from) != 0 else { return }
        let code = errno
        // A filesystem that cannot punch holes keeps the bytes on disk; the stream still works.
        guard code == EOPNOTSUPP || code == ENOSYS else {
            throw failure("cannot release space in the spool", path, Errno(rawValue: code))
        }
    }

    /// Blocks the file occupies on disk, in bytes (for tests: the punched holes really freed them).
    var diskUse: Int64 {
        var info = stat()
        guard fstat(fd.rawValue, &info) == 0 else { return 0 }
        return Int64(info.st_blocks) * 512
    }

    func close() {
        guard isOpen else { return }
        isOpen = false
        try? fd.close()
    }

    /// Closes and deletes the spool: it never outlives its token.
    func remove() {
        close()
        unlink(path)
    }

    private static func failure(_ what: String, _ path: String, _ error: any Error) -> TransferError {
        let reason = (error as? Errno).map { String(cString: strerror($0.rawValue)) } ?? "\(error)"
        return TransferError(.localIO, "\(what) \(path): \(reason)")
    }
}
