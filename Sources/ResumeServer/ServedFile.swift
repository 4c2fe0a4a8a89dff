import Glibc
import COpenCached
import NIOCore
import NIOPosix

/// A regular file below the served folder, opened for a response.
struct ServedFile: Sendable {
    let handle: NIOFileHandle
    let identity: FileIdentity
    /// Asked for by a HEAD with `Want-Repr-Digest` (see ``ReprDigest``).
    var reprDigest: String?

    /// Opens `components` below `root`, following no symbolic link (``SafePath/openBeneath(_:root:flags:)``);
    /// blocking, so it runs on the thread pool.
    static func resolve(_ components: [String], root: String) throws(PathRefusal) -> ServedFile {
        // O_NONBLOCK: opening a FIFO must not hang a thread; cleared again below for regular files.
        let fd = try SafePath.openBeneath(components, root: root, flags: O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard let file = opened(fd) else { throw .notFound }
        return file
    }

    /// The common case without blocking, so on the event loop: `components` (each already checked by
    /// ``SafePath/components(ofTarget:)``: no `..`, no dot-file, no NUL) below `root` (canonical) name a
    /// regular file, no component is a symbolic link, and every lookup is answered by the kernel's
    /// dentry cache (``resumectl_open_cached``). Then the path is inside `root` and holds no hidden
    /// name by construction, and the kernel made sure that no link was followed on the way, in the same
    /// call as the open: the rule ``resolve(_:root:)`` keeps too. `nil` for everything else (a link, a
    /// lookup that would read the disk, a folder, a missing file, an older kernel): ``resolve(_:root:)``
    /// then answers on the thread pool.
    static func openCached(_ components: [String], root: String) -> ServedFile? {
        guard !components.isEmpty else { return nil }
        // `withCString`: a `String` passed as a C string is first copied into an array of its bytes.
        let fd = SafePath.join(root, components).withCString {
            resumectl_open_cached($0, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        }
        guard fd >= 0 else { return nil }
        return opened(fd)
    }

    /// A regular file's descriptor opened with O_NONBLOCK (which must not hang on a FIFO), made a
    /// blocking one; `nil` (and closed) for anything else.
    private static func opened(_ fd: CInt) -> ServedFile? {
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            return nil
        }
        // Of the flags F_SETFL changes, O_NONBLOCK is the only one it was opened with: 0 clears it, without
        // a F_GETFL first.
        _ = fcntl(fd, F_SETFL, 0)
        let identity = FileIdentity(
            inode: UInt64(info.st_ino),
            size: Int64(info.st_size),
            modifiedSeconds: Int64(info.st_mtim.tv_sec),
            modifiedNanoseconds: Int64(info.st_mtim.tv_nsec)
        )
        return ServedFile(handle: NIOFileHandle(_deprecatedTakingOwnershipOfDescriptor: fd), identity: identity)
    }
}
