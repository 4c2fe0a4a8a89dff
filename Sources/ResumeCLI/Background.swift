import ArgumentParser
import FoundationEssentials
import Glibc
import ResumeKit

/// Options of the commands that can run a transfer in the background.
struct BackgroundOptions: ParsableArguments {
    @Flag(help: "Run in a session of its own (log in STATE/logs/ID.log); print the token id and return.")
    var detach = false

    @Option(name: .customLong("start-at"), help: "With --detach: hold the transfer until TIME (ISO 8601, or HH:MM local time).")
    var startAt: StartTime?

    @Flag(name: .customLong("wait-network"), help: "When the host does not resolve or refuses, wait for the network (up to 60 s between tries) without spending retries. On with --detach.")
    var waitNetwork = false

    /// The re-executed background process (see `Detach`).
    @Flag(name: .customLong("detached-child"), help: .hidden)
    var detachedChild = false

    func validate() throws {
        if startAt != nil && !detach && !detachedChild { throw ValidationError("--start-at needs --detach") }
    }

    var waitsForNetwork: Bool { waitNetwork || detachedChild }
}

/// `--detach`: the foreground command checks everything a user can get wrong and writes the token, then
/// runs this same binary again as `… --detached-child` in a session of its own (posix_spawn with
/// POSIX_SPAWN_SETSID: no fork of a multithreaded process), stdin from /dev/null, stdout and stderr to
/// `STATE/logs/<id>.log`. The child says `ready` on a pipe (fd 3) once its live status is written (and,
/// for `--start-at`, once it holds the lock); only then does the foreground print the id and exit 0.
/// A child that dies before that has its exit status and last log line reported by the foreground.
enum Detach {
    /// Starts the background process and prints `announce` (the token id) once it is ready; never returns.
    static func launch(id: String, announce: String, stateDir: String, arguments: [String]) throws -> Never {
        let state = StateDirectory(stateDir)
        try? state.make(state.logs)
        let logPath = state.log(id)
        let log = open(logPath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard log >= 0 else {
            throw Runner.fail(TransferError(.localIO, "cannot open the log \(logPath): \(String(cString: strerror(errno)))"), json: false)
        }
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else {
            throw Runner.fail(TransferError(.localIO, "pipe: \(String(cString: strerror(errno)))"), json: false)
        }
        _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
        let pid: pid_t
        do {
            pid = try Spawner.spawn(arguments + ["--detached-child"], stdout: log, stderr: log, ready: fds[1], newSession: true)
        } catch {
            throw Runner.fail(TransferError(.localIO, "\(error)"), json: false)
        }
        close(fds[1])
        close(log)
        var buffer = [UInt8](repeating: 0, count: 16)
        var said: [UInt8] = []
        while true {
            let n = read(fds[0], &buffer, buffer.count)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            said += buffer[0..<n]
            if said.contains(UInt8(ascii: "\n")) { break }
        }
        close(fds[0])
        if String(decoding: said, as: UTF8.self).hasPrefix("ready") {
            Output.stdout(announce + "\n")
            exit(0)
        }
        // The child ended before it was ready: its error line is the last line of its log.
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let code = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        let last = text.split(separator: "\n").last { $0.hasPrefix("resumectl:") }
        Output.stderr((last.map(String.init) ?? "resumectl: the background process ended (status \(code)); see \(logPath)") + "\n")
        exit(code == 0 ? 0 : code)
    }

    /// Tells the foreground that this background process is under way (fd 3, when it is a pipe).
    static func signalReady() {
        var st = stat()
        guard fstat(3, &st) == 0, (st.st_mode & S_IFMT) == S_IFIFO else { return }
        let text = "ready\n"
        _ = text.withCString { write(3, $0, 6) }
        close(3)
    }

    /// This command's own arguments without `--detach`, plus what a background transfer defaults to:
    /// `--json` events in its log, and unlimited retries unless `--retries` was given.
    static func childArguments() -> [String] {
        backgroundDefaults(Array(CommandLine.arguments.dropFirst()).filter { $0 != "--detach" })
    }

    static func backgroundDefaults(_ arguments: [String]) -> [String] {
        var args = arguments
        if !args.contains("--json") { args.append("--json") }
        if !args.contains(where: { $0 == "--retries" || $0.hasPrefix("--retries=") }) { args += ["--retries", "inf"] }
        return args
    }

    /// Holds a scheduled transfer until `date`, keeping its lock (so `pause`, `cancel` and `list` see it)
    /// and giving way at once to SIGTERM/SIGINT.
    static func hold(until date: Date, id: String, kind: ResumeToken.Kind, url: String, client: TransferClient,
                     live: LiveStatusWriter, cancellation: Cancellation) async throws(TransferError) {
        live.set(phase: "scheduled", startAt: date)
        let lock: TokenLock
        do { lock = try TokenLock(path: client.store.lockPath(forID: id)) } catch {
            throw TransferError(.busy, "\(error); not starting a second one")
        }
        signalReady()
        defer { lock.release() }
        while Date() < date {
            if let reason = cancellation.reason {
                let error = TransferError.stopped(reason, "before its start time", tokenID: id)
                let token = try? client.store.load(id)
                try? client.results.save(TransferRecord(
                    id: id, kind: kind, outcome: .paused, exit: error.exitStatus, resumable: token != nil, url: url,
                    path: token?.download?.path ?? token?.upload?.source.path, bytes: 0, error: error.message))
                throw error
            }
            try? await Task.sleep(for: .milliseconds(min(100, max(1, Int(date.timeIntervalSinceNow * 1000)))))
        }
        live.set(phase: "running")
    }
}
