import Glibc
import FoundationEssentials
import NIOPosix

/// `--on-upload-complete`: runs the hook once each upload's file is in place, at least once per upload.
///
/// The store calls ``makeDue(_:path:)`` before it forgets a finished upload: a small record in
/// `.resumectl-uploads/hooks/<id>.json`, written durably, says the hook is due. It goes only after the
/// hook has run (whatever its exit status), so a hook that was due or running when `serve` died runs
/// after the next start (``resumeDue()``). Hooks run on threads of their own, `parallel` at a time,
/// never on the request's path: the client's answer waits for neither their start nor their end.
final class HookRunner: Sendable {
    /// What a due hook needs, kept on disk until it has run.
    struct Due: Codable, Sendable {
        var id: String
        var path: String
        var size: Int64
        var kind: UploadRecord.Kind
        var user: String?
    }

    private let settings: CompletionHookSettings
    /// Where due hooks are recorded; `nil` when the store records them itself (S3, in its records).
    private let folder: String?
    private let pool: NIOThreadPool
    private let metrics: ServerMetrics?
    private let log: (@Sendable (String) -> Void)?

    /// - Parameter root: the served folder, whose upload store records due hooks; `nil` for a store that
    ///   records them itself.
    init(
        settings: CompletionHookSettings, root: String?, metrics: ServerMetrics?, log: (@Sendable (String) -> Void)?
    ) throws(ServeError) {
        self.settings = settings
        self.metrics = metrics
        self.log = log
        if let root {
            let store = SafePath.join(root, [UploadStore.folderName])
            let folder = store + "/hooks"
            for path in [store, folder] where mkdir(path, 0o700) != 0 && errno != EEXIST {
                throw .uploadStoreUnavailable(path: path, reason: String(cString: strerror(errno)))
            }
            self.folder = folder
        } else {
            folder = nil
        }
        pool = NIOThreadPool(numberOfThreads: max(1, settings.parallel))
        pool.start()
    }

    private func duePath(_ folder: String, _ id: String) -> String { folder + "/" + id + ".json" }

    /// Records, durably, that the hook is due for `record`, whose file is now at `path`. Blocks.
    func makeDue(_ record: UploadRecord, path: String) -> Due {
        let due = Due(
            id: record.id, path: path, size: record.length ?? record.offset, kind: record.kind, user: record.user)
        guard let folder, let bytes = try? JSONEncoder().encode(due) else { return due }
        if let code = UploadStore.write(bytes, to: duePath(folder, record.id), folder: folder) {
            // Still run now; only a crash before it ends would go unnoticed.
            log?("hook for \(path) cannot be recorded as due: \(String(cString: strerror(code)))")
        }
        return due
    }

    /// Queues a due hook; it runs when one of the `parallel` threads is free, then `ran` (not when
    /// stopping: it stays due for the next start).
    func run(_ due: Due, ran: (@Sendable () -> Void)? = nil) {
        pool.submit { state in
            guard state == .active else { return }
            self.runNow(due)
            ran?()
        }
    }

    /// Queues every hook left due by an earlier run of `serve` (killed, or stopped before they ran).
    func resumeDue() {
        guard let folder else { return }
        var due: [Due] = []
        for name in UploadStore.names(in: folder).sorted() {
            let path = folder + "/" + name
            if let bytes = UploadStore.contents(of: path), let one = try? JSONDecoder().decode(Due.self, from: bytes),
                one.id + ".json" == name
            {
                due.append(one)
            } else {
                unlink(path)  // a temp file, or a record cut short before its rename
            }
        }
        if !due.isEmpty { log?("\(due.count) completion hook(s) due from before the restart") }
        for one in due { run(one) }
    }

    /// Stops starting hooks; the ones not run stay due. Does not wait for a running one.
    func shutdown() {
        pool.shutdownGracefully { _ in }
    }

    private func runNow(_ due: Due) {
        let outcome = HookProcess.run(settings.command, environment: environment(for: due), timeout: settings.timeout)
        metrics?.hookRun(outcome.result)
        log?("hook for \(due.path): \(outcome.summary)")
        for line in outcome.stderr.split(separator: "\n").suffix(20) { log?("hook for \(due.path) stderr: \(line)") }
        if let folder { unlink(duePath(folder, due.id)) }
    }

    private func environment(for due: Due) -> [String] {
        var variables = HookProcess.inheritedEnvironment().filter { !$0.hasPrefix("RESUMECTL_") }
        variables.append("RESUMECTL_PATH=\(due.path)")
        variables.append("RESUMECTL_SIZE=\(due.size)")
        variables.append("RESUMECTL_PROTOCOL=\(due.kind.rawValue)")
        variables.append("RESUMECTL_UPLOAD_ID=\(due.id)")
        if let user = due.user { variables.append("RESUMECTL_USER=\(user)") }
        // Known for a file only: an S3 object would have to be read back whole to hash it.
        if folder != nil, let digest = HookProcess.sha256(path: due.path, size: due.size) {
            variables.append("RESUMECTL_SHA256=\(digest)")
        }
        return variables
    }
}
