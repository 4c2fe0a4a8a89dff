import FoundationEssentials
import Glibc

/// `--detach`: after the foreground command checked everything a user can get wrong and wrote the token,
/// this same binary runs again as `… --detached-child` in a session of its own (see ``Spawner``), its output
/// in `STATE/logs/<id>.log`. The child says `ready` on a pipe (fd 3) once its live status is written (and,
/// for `--start-at`, once it holds the lock); only then may the foreground print the id and exit 0.
public enum Detach {
    /// How the start of a background process went.
    public enum Launch: Sendable, Equatable {
        /// It said `ready`: the transfer is under way (or scheduled) in the background.
        case ready
        /// It ended before it was ready, with this status and the last error line of its log.
        case ended(status: Int32, lastLine: String?, log: String)
    }

    /// Starts `arguments` (plus `--detached-child`) in the background with its log for transfer `id` and
    /// waits until it is ready or has ended.
    public static func start(id: String, stateDir: String, arguments: [String]) throws(TransferError) -> Launch {
        let state = StateDirectory(stateDir)
        try? state.make(state.logs)
        let logPath = state.log(id)
        let log = open(logPath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard log >= 0 else {
            throw TransferError(.localIO, "cannot open the log \(logPath): \(String(cString: strerror(errno)))")
        }
        defer { close(log) }
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { throw TransferError(.localIO, "pipe: \(String(cString: strerror(errno)))") }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        defer { close(fds[0]) }
        let pid: pid_t
        do {
            // Our copy of the write end goes at once: the read below ends when the child's does.
            defer { close(fds[1]) }
            pid = try Spawner.spawn(
                arguments + ["--detached-child"], stdout: log, stderr: log, ready: fds[1], newSession: true)
        } catch { throw TransferError(.localIO, "\(error)") }
        var buffer = [UInt8](repeating: 0, count: 16)
        var said: [UInt8] = []
        while true {
            let n = uninterrupted { read(fds[0], &buffer, buffer.count) }
            if n <= 0 { break }
            said += buffer[0..<n]
            if said.contains(UInt8(ascii: "\n")) { break }
        }
        if String(decoding: said, as: UTF8.self).hasPrefix("ready") { return .ready }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        let last = text.split(separator: "\n").last { $0.hasPrefix("resumectl:") }.map(String.init)
        return .ended(status: ExitStatus.of(waitStatus: status), lastLine: last, log: logPath)
    }

    /// Tells the foreground that this background process is under way (fd 3, when it is a pipe).
    public static func signalReady() {
        var st = stat()
        guard fstat(3, &st) == 0, (st.st_mode & S_IFMT) == S_IFIFO else { return }
        _ = write(3, "ready\n", 6)
        close(3)
    }

    /// What a background transfer defaults to besides its command line: `--json` events in its log, and
    /// unlimited retries unless `--retries` was given.
    public static func backgroundDefaults(_ arguments: [String]) -> [String] {
        var args = arguments
        if !args.contains("--json") { args.append("--json") }
        if !args.contains(where: { $0 == "--retries" || $0.hasPrefix("--retries=") }) { args += ["--retries", "inf"] }
        return args
    }

    /// Holds a scheduled transfer until `date`, keeping its lock (so `pause`, `cancel` and `list` see it)
    /// and giving way at once to SIGTERM/SIGINT.
    public static func hold(
        until date: Date, id: String, kind: ResumeToken.Kind, url: String, client: TransferClient,
        live: LiveStatusWriter,
        cancellation: Cancellation
    ) async throws(TransferError) {
        live.set(phase: .scheduled, startAt: date)
        let lock = TokenGuard(store: client.store, id: id)
        try lock.hold()
        signalReady()
        defer { lock.release() }
        while Date() < date {
            if let reason = cancellation.reason {
                let error = TransferError.stopped(reason, "before its start time", tokenID: id)
                client.recordFailure(error, id: id, kind: kind, url: url)
                throw error
            }
            try? await Task.sleep(for: .milliseconds(min(100, max(1, Int(date.timeIntervalSinceNow * 1000)))))
        }
        live.set(phase: .running)
    }
}
