import Glibc

/// `resume --all`: a pool of `resumectl resume ID` processes, N at a time, so that each transfer keeps
/// its own lock, pid (for `pause`) and exit status.
public enum Supervisor {
    /// The transfers `resume --all` continues: paused ones and those that failed resumably; a folder upload
    /// as its batch (`b-…`), never one of its files alone.
    public static func resumable(store: TokenStore) -> [String] {
        let batches = BatchLedger.ids(state: store.state)
        let tokens = store.all().tokens.filter { $0.upload?.batch == nil }
        return (tokens.map { ($0.id, $0) } + batches.map { ($0, nil) }).compactMap { id, token -> String? in
            guard let state = TransferState(id: id, store: store, token: token) else { return nil }
            return state.phase == .paused || state.phase == .resumable ? id : nil
        }
    }

    /// Runs `arguments(id)` for every id, `parallel` at a time, each with its own log when `logs`, and returns
    /// their exit statuses. Until its process takes over, each is `queued` under this pid, so that `wait` and
    /// `list` see it as under way, not paused. `spawnFailed` hears of a process that could not start (status 1);
    /// `queuedAll` runs once every id is queued (a detached pool is `ready` then).
    public static func run(
        ids: [String], parallel: Int, store: TokenStore, logs: Bool, arguments: (String) -> [String],
        spawnFailed: (String, any Error) -> Void, queuedAll: () -> Void = {}
    ) -> [Int32] {
        var queued: [String: LiveStatusWriter] = [:]
        for id in ids { queued[id] = LiveStatusWriter(stateDir: store.directory, id: id, phase: .queued) }
        queuedAll()
        var queue = ids[...]
        var running: [pid_t: String] = [:]
        var statuses: [Int32] = []
        try? store.state.make(store.state.logs)
        while !queue.isEmpty || !running.isEmpty {
            while running.count < parallel, let id = queue.popFirst() {
                let fd = logs ? open(store.state.log(id), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600) : -1
                let log = fd >= 0 ? fd : nil
                defer { if let log { close(log) } }
                do {
                    running[try Spawner.spawn(arguments(id), stdout: log, stderr: log, newSession: false)] = id
                } catch {
                    spawnFailed(id, error)
                    queued[id]?.finish()
                    statuses.append(1)
                }
            }
            var status: Int32 = 0
            let pid = waitpid(-1, &status, 0)
            if pid < 0 {
                if errno == EINTR { continue }
                break
            }
            guard let id = running.removeValue(forKey: pid) else { continue }
            // The transfer's process removed its status when it ended; one that died leaves its own or ours.
            let left = LiveStatus.load(stateDir: store.directory, id: id)
            if left == nil || left?.pid == getpid() { queued[id]?.finish() }
            statuses.append(ExitStatus.of(waitStatus: status))
        }
        return statuses
    }
}
