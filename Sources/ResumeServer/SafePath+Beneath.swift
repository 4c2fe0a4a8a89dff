import Glibc
import COpenCached

/// The file-system stage of ``SafePath``: every path is opened relative to the served folder by the
/// kernel itself (``resumectl_open_beneath``: openat2 with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), so no
/// symbolic link is ever followed, inside the folder or out, and nothing swapped in between a check and
/// a use can redirect it. Kept apart from SafePath.swift, which the fuzz target compiles without the shim.
extension SafePath {
    /// Opens `components` (from ``components(ofTarget:)``) below `root` with `flags`; the caller closes
    /// the descriptor. No components: `root` itself.
    static func openBeneath(_ components: [String], root: String, flags: CInt) throws(PathRefusal) -> CInt {
        guard components.count <= maxDepth, components.allSatisfy(isPlainName) else { throw .forbidden }
        let folder = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard folder >= 0 else { throw .forbidden }
        defer { close(folder) }
        let fd = resumectl_open_beneath(folder, components.isEmpty ? "." : components.joined(separator: "/"), flags, 0)
        guard fd >= 0 else { throw refusal(errno) }
        return fd
    }

    /// The type (`S_IFMT` bits) of what is at `components` below `root`, a link itself included; `nil`
    /// when nothing is (or a file stands where a folder should).
    static func fileType(_ components: [String], root: String) throws(PathRefusal) -> mode_t? {
        guard let name = components.last else { return S_IFDIR }
        guard isPlainName(name) else { throw .forbidden }
        let folder: CInt
        do throws(PathRefusal) {
            let flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC
            folder = try openBeneath(Array(components.dropLast()), root: root, flags: flags)
        } catch {
            if error == .notFound { return nil }
            throw error
        }
        defer { close(folder) }
        var info = stat()
        guard fstatat(folder, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else {
            if errno == ENOENT { return nil }
            throw .forbidden
        }
        return info.st_mode & S_IFMT
    }

    /// The folder an upload to `components` lands in, opened (each missing folder created, one name at a
    /// time below the one before), and the file's name in it. The caller closes the descriptor and puts
    /// the file in place relative to it (`renameat`, `linkat`): a link swapped in meanwhile cannot
    /// redirect it.
    static func uploadDestination(
        _ components: [String],
        root: String
    ) throws(PathRefusal) -> (folder: CInt, name: String) {
        guard let name = components.last else { throw .conflict }
        guard components.count <= maxDepth, components.allSatisfy(isPlainName) else { throw .forbidden }
        var folder = try openBeneath([], root: root, flags: O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        for component in components.dropLast() {
            let flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC
            var next = resumectl_open_beneath(folder, component, flags, 0)
            // EEXIST: a concurrent upload created it first; the open after says what it is.
            if next < 0 && errno == ENOENT && (mkdirat(folder, component, 0o755) == 0 || errno == EEXIST) {
                next = resumectl_open_beneath(folder, component, flags, 0)
            }
            let code = errno
            close(folder)
            guard next >= 0 else { throw code == ENOTDIR ? .conflict : .forbidden }
            folder = next
        }
        var info = stat()
        if fstatat(folder, name, &info, AT_SYMLINK_NOFOLLOW) == 0, info.st_mode & S_IFMT == S_IFDIR {
            close(folder)
            throw .conflict
        }
        return (folder, name)
    }

    /// ELOOP (a link), EXDEV (out of the folder), EACCES and the rest are refusals; a missing name is not.
    private static func refusal(_ code: CInt) -> PathRefusal {
        code == ENOENT || code == ENOTDIR ? .notFound : .forbidden
    }
}
