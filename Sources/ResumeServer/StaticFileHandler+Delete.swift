import Glibc
import NIOCore
import NIOHTTP1
import NIOPosix

/// DELETE of one plain file (what `resumectl sync --delete` sends): a write like an upload, so it passes the
/// same gates before it gets here (a login with `--htpasswd`, none under `--read-only`), and, as removing a
/// file is replacing it with nothing, only with `--overwrite`. Folders, links and hidden names are refused;
/// the path is resolved below the served folder by the kernel, as every upload's is.
extension StaticFileHandler {
    func delete(context: ChannelHandlerContext, head: HTTPRequestHead) {
        mode = .serving
        let components: [String]
        do {
            components = try SafePath.components(ofTarget: head.uri)
        } catch {
            respond(context: context, head: head, refusal: error)
            return
        }
        guard settings.objects == nil, !components.isEmpty else {
            respond(context: context, head: head, status: .methodNotAllowed, extra: [("Allow", Self.allowed)])
            return
        }
        guard settings.overwrite else {
            let text = "403 Forbidden: serve with --overwrite to delete files\n"
            respond(context: context, head: head, status: .forbidden, text: text)
            return
        }
        let root = settings.root
        threadPool.runIfActive(eventLoop: context.eventLoop) { () throws -> HTTPResponseStatus in
            try Self.unlinkPlainFile(components, root: root)
        }.assumeIsolated().whenComplete { result in
            switch result {
            case .success(let status): self.respond(context: context, head: head, status: status)
            case .failure(let refusal as PathRefusal): self.respond(context: context, head: head, refusal: refusal)
            case .failure: self.respond(context: context, head: head, status: .internalServerError)
            }
        }
    }

    /// Removes the plain file at `components` below `root`; the answer's status (a refusal is thrown).
    static func unlinkPlainFile(_ components: [String], root: String) throws -> HTTPResponseStatus {
        guard let name = components.last else { return .methodNotAllowed }
        let flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC
        let folder = try SafePath.openBeneath(Array(components.dropLast()), root: root, flags: flags)
        defer { closeFolder(folder) }
        var info = stat()
        guard fstatat(folder, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else {
            return errno == ENOENT ? .notFound : .forbidden
        }
        guard info.st_mode & S_IFMT == S_IFREG else { return .forbidden }
        guard unlinkat(folder, name, 0) == 0 else { return errno == ENOENT ? .notFound : .forbidden }
        // The answer promises the file is gone: the folder's entry is made durable first.
        _ = fsync(folder)
        return .ok
    }
}

/// Outside the handler, whose own `close` would be found first.
private func closeFolder(_ fd: CInt) { _ = close(fd) }
