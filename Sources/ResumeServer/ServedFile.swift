#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import COpenCached
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
        guard let file = opened(fd) else { throw .notFound }
        return file
    }

    /// The common case without blocking, so on the event loop: `components` (each already checked by
    /// ``SafePath/components(ofTarget:)``: no `..`, no dot-file, no NUL) below `root` (canonical) name a
    /// regular file, no component is a symbolic link, and every lookup is answered by the kernel's
    /// dentry cache (``resumectl_open_cached``). Then the path is inside `root` and holds no hidden
    /// name by construction, the checks ``SafePath/existing(_:root:)`` makes after resolving links, and
    /// the kernel made sure that no link was followed on the way, in the same call as the open.
    /// `nil` for everything else (a link, a lookup that would read the disk, a folder, a missing
    /// file, an older kernel): ``resolve(_:root:)`` then answers on the thread pool, as before.
    static func openCached(_ components: [String], root: String) -> ServedFile? {
        // Each component one plain name to the kernel too, byte for byte: ``SafePath`` splits and
        // compares by Character, so a `/` can hide inside a component (after a prepended mark, before a
        // combining one) and a name can start with a `.` byte that it does not see as a dot-file.
        // Such paths take the full resolution, whose checks see what the file system sees.
        guard !components.isEmpty, components.allSatisfy(isPlainName) else { return nil }
        // `withCString`: a `String` passed as a C string is first copied into an array of its bytes.
        let fd = SafePath.join(root, components).withCString { resumectl_open_cached($0, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK) }
        guard fd >= 0 else { return nil }
        return opened(fd)
    }

    private static func isPlainName(_ name: String) -> Bool {
        let bytes = name.utf8
        guard let first = bytes.first else { return false }
        return first != UInt8(ascii: ".") && !bytes.contains(UInt8(ascii: "/"))
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
