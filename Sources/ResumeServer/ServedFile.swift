#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import NIOCore
import NIOPosix

/// A regular file below the served folder, opened for a response.
struct ServedFile: Sendable {
    let handle: NIOFileHandle
    let identity: FileIdentity
    /// Asked for by a HEAD with `Want-Repr-Digest` (see ``ReprDigest``).
    var reprDigest: String?

    /// Resolves and opens `components` below `root`; blocking, so it runs on the thread pool.
    static func resolve(_ components: [String], root: String) throws(PathRefusal) -> ServedFile {
        let path = try SafePath.existing(components, root: root)
        // O_NOFOLLOW: the canonical path has no links left, so a link now means it was swapped in.
        // O_NONBLOCK: opening a FIFO must not hang a thread; cleared again below for regular files.
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else { throw errno == EACCES ? .forbidden : .notFound }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            throw .notFound
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        let identity = FileIdentity(
            inode: UInt64(info.st_ino),
            size: Int64(info.st_size),
            modifiedSeconds: Int64(info.st_mtim.tv_sec),
            modifiedNanoseconds: Int64(info.st_mtim.tv_nsec)
        )
        return ServedFile(handle: NIOFileHandle(_deprecatedTakingOwnershipOfDescriptor: fd), identity: identity)
    }
}
