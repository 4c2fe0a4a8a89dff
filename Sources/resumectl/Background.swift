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

/// `--start-at TIME`: `HH:MM` (local time, the next such moment) or ISO 8601 (`2026-11-23T06:00`, local
/// time, or with `Z` / `+01:00`).
struct StartTime: ExpressibleByArgument {
    var date: Date

    init?(argument: String) {
        guard let date = Self.parse(argument, now: Date()) else { return nil }
        self.date = date
    }

    static func parse(_ text: String, now: Date) -> Date? {
        let digits = { (s: Substring) -> Int? in s.allSatisfy(\.isNumber) && !s.isEmpty ? Int(s) : nil }
        if text.count <= 5, text.contains(":") {
            let parts = text.split(separator: ":")
            guard parts.count == 2, let h = digits(parts[0]), let m = digits(parts[1]), h < 24, m < 60 else { return nil }
            var t = time_t(now.timeIntervalSince1970)
            var tm = tm()
            localtime_r(&t, &tm)
            tm.tm_hour = Int32(h)
            tm.tm_min = Int32(m)
            tm.tm_sec = 0
            tm.tm_isdst = -1
            var at = Double(mktime(&tm))
            if at <= now.timeIntervalSince1970 { at += 86_400 }
            return Date(timeIntervalSince1970: at)
        }
        // YYYY-MM-DD[T ]HH:MM[:SS][Z|±HH:MM|±HHMM]
        let chars = Array(text)
        guard chars.count >= 16, chars[4] == "-", chars[7] == "-", chars[10] == "T" || chars[10] == " ", chars[13] == ":"
        else { return nil }
        let field = { (a: Int, b: Int) -> Int? in digits(Substring(String(chars[a..<b]))) }
        guard let year = field(0, 4), let month = field(5, 7), let day = field(8, 10), let hour = field(11, 13),
            let minute = field(14, 16), (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60
        else { return nil }
        var rest = chars[16...]
        var second = 0
        if rest.first == ":" {
            guard rest.count >= 3, let s = digits(Substring(String(rest.dropFirst().prefix(2)))), s < 61 else { return nil }
            second = s
            rest = rest.dropFirst(3)
        }
        if rest.first == "." { rest = rest.dropFirst().drop(while: \.isNumber) }
        var tm = tm()
        tm.tm_year = Int32(year - 1900)
        tm.tm_mon = Int32(month - 1)
        tm.tm_mday = Int32(day)
        tm.tm_hour = Int32(hour)
        tm.tm_min = Int32(minute)
        tm.tm_sec = Int32(second)
        tm.tm_isdst = -1
        if rest.isEmpty { return Date(timeIntervalSince1970: Double(mktime(&tm))) }
        var offset = 0
        if rest == ["Z"] || rest == ["z"] {
            offset = 0
        } else {
            guard let sign = rest.first, sign == "+" || sign == "-" else { return nil }
            let zone = String(rest.dropFirst().filter { $0 != ":" })
            guard zone.count == 4, let hh = digits(Substring(zone.prefix(2))), let mm = digits(Substring(zone.suffix(2))) else { return nil }
            offset = (hh * 3600 + mm * 60) * (sign == "-" ? -1 : 1)
        }
        return Date(timeIntervalSince1970: Double(timegm(&tm) - offset))
    }
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
        let logs = stateDir + "/logs"
        mkdir(stateDir, 0o700)
        mkdir(logs, 0o700)
        let logPath = logs + "/\(id).log"
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
                let error = TransferError(.stopped(reason), "\(reason == .interrupt ? "interrupted" : "paused") before its start time", tokenID: id)
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

/// posix_spawn of this very binary (`/proc/self/exe`): no fork() of a multithreaded Swift process.
enum Spawner {
    struct Failure: Error, CustomStringConvertible { var description: String }

    static func spawn(_ arguments: [String], stdout: Int32? = nil, stderr: Int32? = nil, ready: Int32? = nil, newSession: Bool) throws -> pid_t {
        let exe = executable()
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        if let stdout { posix_spawn_file_actions_adddup2(&actions, stdout, 1) }
        if let stderr { posix_spawn_file_actions_adddup2(&actions, stderr, 2) }
        if let ready { posix_spawn_file_actions_adddup2(&actions, ready, 3) }
        if let closeFrom = addCloseFrom { _ = closeFrom(&actions, ready == nil ? 3 : 4) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        let setsid: Int32 = 0x80  // POSIX_SPAWN_SETSID (glibc 2.26+), hidden from Swift behind _GNU_SOURCE
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | (newSession ? setsid : 0)))
        let argv = ([exe] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid = pid_t()
        let status = posix_spawn(&pid, exe, &actions, &attributes, argv, environ)
        guard status == 0 else { throw Failure(description: "cannot start \(exe): \(String(cString: strerror(status)))") }
        return pid
    }

    static func executable() -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        return n > 0 ? String(cString: buffer) : CommandLine.arguments[0]
    }

    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32
    private static let addCloseFrom: AddCloseFrom? = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np").map {
        unsafeBitCast($0, to: AddCloseFrom.self)
    }
}
