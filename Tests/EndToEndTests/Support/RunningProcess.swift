import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// How a child process ended, with everything it printed.
public struct ProcessResult: Sendable, CustomStringConvertible {
    /// The exit status, or the signal number when `signaled` is true.
    public let status: Int32
    /// True when an uncaught signal ended the process (then `status` is the signal, e.g. 9).
    public let signaled: Bool
    public let stdout: String
    public let stderr: String

    /// `stdout` split into lines, without the empty tail after the last newline.
    public var stdoutLines: [String] { splitLines(stdout) }

    public var description: String {
        "\(signaled ? "signal" : "exit") \(status)\n--- stdout ---\n\(stdout)--- stderr ---\n\(stderr)"
    }
}

/// Runs a program to completion and returns its status and output.
///
/// Pipes are drained on their own threads while the program runs, so a chatty program never blocks on a
/// full pipe. `environment` is added to (and overrides) the test runner's own environment unless
/// `inheritEnvironment` is false. Throws if the program cannot be started or is still running after
/// `timeout` (it is then killed with SIGKILL and the error shows what it printed).
public func runProcess(
    _ executable: String,
    _ arguments: [String],
    environment: [String: String] = [:],
    inheritEnvironment: Bool = true,
    currentDirectory: String? = nil,
    stdin: Data? = nil,
    timeout: Duration = .seconds(60)
) async throws -> ProcessResult {
    let process = try RunningProcess(
        executable, arguments, environment: environment, inheritEnvironment: inheritEnvironment,
        currentDirectory: currentDirectory, stdin: stdin)
    return try await process.wait(timeout: timeout)
}

/// A started child process whose stdout can be read line by line while it runs, that can be signalled
/// (pause, Ctrl-C, `kill -9` scenarios) and waited for. It is killed with SIGKILL if dropped while running.
///
/// Started with `posix_spawn` (see `spawnChild`): default signal handling, nothing blocked, no inherited
/// descriptors. Three threads per process (two pipe readers, one `waitpid`), never the cooperative pool.
public final class RunningProcess: Sendable {
    private let state = Locked(Output())
    public let pid: Int32
    public let executable: String

    private struct Output: Sendable {
        var stdout: [UInt8] = []
        var stderr: [UInt8] = []
        var lines: [String] = []
        /// Where the line being received starts in `stdout`.
        var lineStart = 0
        var nextLineIndex = 0
        var stdoutClosed = false
        var stderrClosed = false
        var exit: (status: Int32, signaled: Bool)?
    }

    /// Starts `executable` (a path, or a name looked up in `PATH`) with `arguments`. `environment` is added
    /// to the test runner's environment (overriding it) unless `inheritEnvironment` is false.
    public init(
        _ executable: String,
        _ arguments: [String],
        environment: [String: String] = [:],
        inheritEnvironment: Bool = true,
        currentDirectory: String? = nil,
        stdin: Data? = nil
    ) throws {
        _ = ignoreSIGPIPE
        var env = inheritEnvironment ? ProcessInfo.processInfo.environment : [:]
        env.merge(environment) { _, new in new }
        let child = try spawnChild(
            executable, arguments, environment: env, currentDirectory: currentDirectory,
            withStdin: stdin != nil)
        self.pid = child.pid
        self.executable = executable
        let state = self.state
        Self.drain(child.stdout, state: state, isStdout: true)
        Self.drain(child.stderr, state: state, isStdout: false)
        if let stdin {
            let fd = child.stdin
            Thread {
                stdin.withUnsafeBytes { raw in
                    var offset = 0
                    while offset < raw.count {
                        let n = write(fd, raw.baseAddress! + offset, raw.count - offset)
                        if n < 0 && errno == EINTR { continue }
                        if n <= 0 { break }
                        offset += n
                    }
                }
                close(fd)
            }.start()
        }
        let pid = child.pid
        ChildReaper.add(pid)
        Thread {
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            ChildReaper.remove(pid)
            let ended = decodeWaitStatus(status)
            state.withLock { $0.exit = ended }
        }.start()
    }

    /// Reads one pipe to EOF on a dedicated thread (blocking `read(2)`, never the cooperative pool).
    private static func drain(_ fd: Int32, state: Locked<Output>, isStdout: Bool) {
        Thread {
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                let chunk = buffer[0..<n]
                state.withLock { output in
                    if isStdout {
                        // Only the new bytes are searched (memchr), so long output without newlines is cheap.
                        var searchFrom = output.stdout.count
                        output.stdout.append(contentsOf: chunk)
                        while let newline = output.stdout.withUnsafeBytes({ raw -> Int? in
                            guard let base = raw.baseAddress, searchFrom < raw.count,
                                let hit = memchr(base + searchFrom, 0x0A, raw.count - searchFrom)
                            else { return nil }
                            return base.distance(to: UnsafeRawPointer(hit))
                        }) {
                            output.lines.append(decodeLine(output.stdout[output.lineStart..<newline]))
                            output.lineStart = newline + 1
                            searchFrom = newline + 1
                        }
                    } else {
                        output.stderr.append(contentsOf: chunk)
                    }
                }
            }
            close(fd)
            state.withLock { output in
                if isStdout {
                    if output.lineStart < output.stdout.count {
                        output.lines.append(decodeLine(output.stdout[output.lineStart...]))
                    }
                    output.stdoutClosed = true
                } else {
                    output.stderrClosed = true
                }
            }
        }.start()
    }

    public var isRunning: Bool { state.withLock { $0.exit == nil } }

    /// Everything printed to stdout so far.
    public var stdoutSoFar: String { state.withLock { String(decoding: $0.stdout, as: UTF8.self) } }
    /// Everything printed to stderr so far.
    public var stderrSoFar: String { state.withLock { String(decoding: $0.stderr, as: UTF8.self) } }
    /// Complete stdout lines so far (a last line without newline appears once stdout is closed).
    public var linesSoFar: [String] { state.withLock { $0.lines } }

    /// The next stdout line not returned before; nil once stdout is closed and every line was read.
    /// Throws if no line arrives within `timeout`.
    public func nextLine(timeout: Duration = .seconds(30)) async throws -> String? {
        let deadline = ContinuousClock.now + timeout
        while true {
            let next: String?? = state.withLock { output in
                if output.nextLineIndex < output.lines.count {
                    defer { output.nextLineIndex += 1 }
                    return .some(output.lines[output.nextLineIndex])
                }
                return output.stdoutClosed ? .some(nil) : nil
            }
            if let next { return next }
            if ContinuousClock.now >= deadline {
                throw SupportError("no stdout line from \(executable) within \(timeout); stderr: \(stderrSoFar)")
            }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Reads stdout lines (consuming them) until one satisfies `predicate` and returns it. Throws if stdout
    /// closes or `timeout` passes first.
    public func waitForLine(
        timeout: Duration = .seconds(30),
        where predicate: (String) -> Bool
    ) async throws -> String {
        let deadline = ContinuousClock.now + timeout
        while true {
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero else {
                throw SupportError(
                    "no matching stdout line from \(executable) within \(timeout); stdout: \(stdoutSoFar) stderr: "
                        + "\(stderrSoFar)"
                )
            }
            guard let line = try await nextLine(timeout: remaining) else {
                throw SupportError(
                    "\(executable) closed stdout before a matching line; stdout: \(stdoutSoFar) stderr: \(stderrSoFar)")
            }
            if predicate(line) { return line }
        }
    }

    /// Sends `signal` (SIGINT, SIGTERM, SIGKILL…) to the process; a no-op once it has exited.
    public func send(signal: Int32) {
        guard isRunning else { return }
        kill(pid, signal)
    }

    /// Waits for the process to exit and its pipes to close, and returns the result. After `timeout` the
    /// process is killed (SIGKILL) and an error carrying its output is thrown.
    public func wait(timeout: Duration = .seconds(60)) async throws -> ProcessResult {
        let deadline = ContinuousClock.now + timeout
        var exitedAt: ContinuousClock.Instant?
        while true {
            let (exit, closed) = state.withLock { ($0.exit, $0.stdoutClosed && $0.stderrClosed) }
            if let exit {
                // A grandchild that inherited a pipe could hold it open forever: give EOF two seconds.
                let exited = exitedAt ?? ContinuousClock.now
                exitedAt = exited
                if closed || ContinuousClock.now - exited > .seconds(2) {
                    return state.withLock { output in
                        ProcessResult(
                            status: exit.status, signaled: exit.signaled,
                            stdout: String(decoding: output.stdout, as: UTF8.self),
                            stderr: String(decoding: output.stderr, as: UTF8.self))
                    }
                }
            } else if ContinuousClock.now >= deadline {
                kill(pid, SIGKILL)
                throw SupportError(
                    "\(executable) still running after \(timeout), killed; stdout: \(stdoutSoFar) stderr: "
                        + "\(stderrSoFar)"
                )
            }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    deinit {
        if isRunning { kill(pid, SIGKILL) }
    }
}

private func decodeLine(_ bytes: ArraySlice<UInt8>) -> String {
    var line = bytes
    if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
    return String(decoding: line, as: UTF8.self)
}

func splitLines(_ text: String) -> [String] {
    // Byte-level: in Swift "\r\n" is one Character, so splitting Characters on "\n" would miss it.
    var lines = text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map {
        decodeLine(ArraySlice($0))
    }
    if lines.last == "" { lines.removeLast() }
    return lines
}

/// Kills the children still running when the test process exits, so that a test that fails half-way
/// (or a server object that is never released) cannot leave an nginx or a resumectl behind.
enum ChildReaper {
    private static let pids = Locked(Set<Int32>())
    private static let installed: Void = { atexit { ChildReaper.killAll() } }()

    static func add(_ pid: Int32) {
        _ = installed
        pids.withLock { _ = $0.insert(pid) }
    }

    static func remove(_ pid: Int32) {
        pids.withLock { _ = $0.remove(pid) }
    }

    static func killAll() {
        for pid in pids.withLock({ $0 }) { kill(pid, SIGKILL) }
    }
}
