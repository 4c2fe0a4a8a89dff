import Glibc
import CHookSpawn
import ResumeKit

/// One run of a completion hook: started without a shell (``resumectl_spawn_hook``), its stderr kept
/// (the last 8 KiB) for the log, killed with its process group once `timeout` is over. Blocks its
/// thread (one of ``HookRunner``'s) until the hook has ended.
enum HookProcess {
    struct Outcome {
        /// `ok`, `failed` or `timeout`, for the metrics.
        var result: String
        /// For the log: `exit 0 in 0.2 s`.
        var summary: String
        var stderr: String
    }

    private static let kept = 8 << 10

    static func run(_ command: [String], environment: [String], timeout: Duration) -> Outcome {
        let start = ContinuousClock.now
        var pipeEnds: [Int32] = [-1, -1]
        let null = open("/dev/null", O_RDWR | O_CLOEXEC)
        guard let program = command.first.flatMap(locate) else {
            if null >= 0 { close(null) }
            return Outcome(result: "failed", summary: "cannot start: \(command.first ?? "") not found", stderr: "")
        }
        guard null >= 0, resumectl_cloexec_pipe(&pipeEnds) == 0 else {
            if null >= 0 { close(null) }
            return Outcome(result: "failed", summary: "cannot start: \(String(cString: strerror(errno)))", stderr: "")
        }
        let pid = withCStrings(command) { argv in
            withCStrings(environment) { envp in resumectl_spawn_hook(program, argv, envp, null, pipeEnds[1]) }
        }
        let spawnError = errno
        close(null)
        close(pipeEnds[1])
        defer { close(pipeEnds[0]) }
        guard pid > 0 else {
            return Outcome(
                result: "failed", summary: "cannot start: \(String(cString: strerror(spawnError)))", stderr: "")
        }
        let (stderr, timedOut) = collect(pipeEnds[0], until: start + timeout)
        if timedOut { kill(-pid, SIGKILL) }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let (seconds, attoseconds) = (ContinuousClock.now - start).components
        let took = "in \(Double(seconds) + Double(attoseconds / 100_000_000_000_000_000) / 10) s"
        let text = String(decoding: stderr, as: UTF8.self)
        if timedOut { return Outcome(result: "timeout", summary: "killed after its timeout, \(took)", stderr: text) }
        let exited = status & 0x7f == 0
        let code = exited ? (status >> 8) & 0xff : status & 0x7f
        let summary = exited ? "exit \(code) \(took)" : "killed by signal \(code) \(took)"
        return Outcome(result: exited && code == 0 ? "ok" : "failed", summary: summary, stderr: text)
    }

    /// Reads `fd` until its end or `deadline`; the last ``kept`` bytes, and whether the deadline came first.
    private static func collect(_ fd: Int32, until deadline: ContinuousClock.Instant) -> ([UInt8], Bool) {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let left = ContinuousClock.now.duration(to: deadline)
            if left <= .zero { return (bytes, true) }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let millis = Int32(min(left.components.seconds * 1000 + 1, 60_000))
            let ready = poll(&poller, 1, millis)
            if ready < 0 && errno == EINTR { continue }
            if ready <= 0 { continue }
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return (bytes, false) }
            bytes.append(contentsOf: chunk[0..<n])
            if bytes.count > kept { bytes.removeFirst(bytes.count - kept) }
        }
    }

    /// The executable `program` names: itself when it has a slash, else the first match in `PATH`.
    static func locate(_ program: String) -> String? {
        if program.contains("/") { return access(program, X_OK) == 0 ? program : nil }
        let path = getenv("PATH").map { String(cString: $0) } ?? "/usr/local/bin:/usr/bin:/bin"
        for folder in path.split(separator: ":", omittingEmptySubsequences: false) {
            let candidate = (folder.isEmpty ? "." : String(folder)) + "/" + program
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }

    /// `serve`'s own environment, as `NAME=value` strings.
    static func inheritedEnvironment() -> [String] {
        var variables: [String] = []
        var cursor = environ
        while let entry = cursor.pointee {
            variables.append(String(cString: entry))
            cursor += 1
        }
        return variables
    }

    /// The hex SHA-256 of the file at `path`, if it still holds `size` bytes (read on the hook's thread).
    static func sha256(path: String, size: Int64) -> String? {
        var info = stat()
        guard stat(path, &info) == 0, Int64(info.st_size) == size else { return nil }
        return try? FileDigest.sha256(path: path)
    }

    /// A NULL-terminated `char *` array of `strings` for the duration of `body`.
    private static func withCStrings<T>(_ strings: [String], _ body: ([UnsafeMutablePointer<CChar>?]) -> T) -> T {
        let pointers = strings.map { strdup($0) } + [nil]
        defer { for pointer in pointers { free(pointer) } }
        return body(pointers)
    }
}
