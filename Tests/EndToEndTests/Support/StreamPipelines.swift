import Foundation
import Testing

/// What the suites of stream transfers share: `producer | resumectl … | consumer` through bash, the spool
/// folder, and a kill -9 at a chosen moment of the token.
protocol StreamPipelines {}

extension StreamPipelines {
    /// `PRODUCER | resumectl ARGS | CONSUMER`, started in bash; either end may be left out. resumectl's exit
    /// status goes to stderr as `status=N` as soon as it ends, though a producer may run on.
    /// - Parameters:
    ///   - setUp: commands run first in resumectl's own subshell, such as `ulimit -f 6144`.
    ///   - printingPID: resumectl's pid is the first line on stdout, `pid=N` (see ``pid(_:)``).
    func startPipeline(
        _ w: Workspace, producer: String? = nil, _ args: [String], into consumer: String? = nil, setUp: String? = nil,
        printingPID: Bool = false, environment: [String: String] = [:]
    ) throws -> RunningProcess {
        let command = ([resumectlBinary] + args + ["--state-dir", w.state]).map { "'" + $0 + "'" }.joined(
            separator: " ")
        // In the background, resumectl keeps the pipe as its stdin only when told so (`<&0`).
        let run = printingPID ? "\(command) <&0 & pid=$!; echo \"pid=$pid\"; wait $pid" : command
        let stage = "{ " + (setUp.map { $0 + "; " } ?? "") + run + "; echo \"status=$?\" >&2; }"
        let script = [producer, stage, consumer].compactMap { $0 }.joined(separator: " | ")
        return try RunningProcess("/bin/bash", ["-c", script], environment: environment, currentDirectory: w.out)
    }

    /// ``startPipeline(_:producer:_:into:setUp:printingPID:environment:)`` to its end: what it printed, and resumectl's
    /// status.
    func pipeline(
        _ w: Workspace, producer: String? = nil, _ args: [String], into consumer: String? = nil,
        environment: [String: String] = [:],
        timeout: Duration = .seconds(180)
    ) async throws -> (ProcessResult, Int32) {
        let r = try await startPipeline(w, producer: producer, args, into: consumer, environment: environment).wait(
            timeout: timeout)
        return (r, status(r))
    }

    /// resumectl's exit status in a pipeline's output, or -1.
    func status(_ r: ProcessResult) -> Int32 {
        let line = r.stderr.split(separator: "\n").last { $0.hasPrefix("status=") } ?? ""
        return Int32(line.dropFirst(7)) ?? -1
    }

    /// resumectl's pid, from a pipeline started `printingPID`.
    func pid(_ p: RunningProcess) async throws -> Int32 {
        let line = try await p.waitForLine { $0.hasPrefix("pid=") }
        return try #require(Int32(line.dropFirst(4)))
    }

    /// `resumectl resume ID EXTRA` to its end with `stdin` piped in (nothing by default); given `environment`,
    /// that is all the environment it gets.
    func resume(
        _ w: Workspace, _ id: String, _ extra: [String] = [], stdin: Data = Data(),
        environment: [String: String]? = nil,
        timeout: Duration = .seconds(60)
    ) async throws -> ProcessResult {
        try await runProcess(
            resumectlBinary, ["resume", id, "--state-dir", w.state] + extra, environment: environment ?? [:],
            inheritEnvironment: environment == nil, currentDirectory: w.out, stdin: stdin, timeout: timeout)
    }

    /// The bytes of the file at `path`, to pipe in.
    func contents(_ path: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: path)) }

    func spoolFiles(_ w: Workspace) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: w.state + "/spool")) ?? []
    }

    /// Samples the spool's disk use every `interval` while `p` runs: the most it held, and how many samples were taken.
    func spoolPeak(_ w: Workspace, while p: RunningProcess, every interval: Duration) async throws -> (
        peak: Int, samples: Int
    ) {
        var peak = 0
        var samples = 0
        while p.isRunning {
            for name in spoolFiles(w) {
                var info = stat()
                if stat(w.state + "/spool/" + name, &info) == 0 {
                    peak = max(peak, Int(info.st_blocks) * 512)
                    samples += 1
                }
            }
            try await Task.sleep(for: interval)
        }
        return (peak, samples)
    }
    /// Starts a slow stream upload and kills it (SIGKILL) once its token shows `condition` and the server
    /// acknowledged bytes (or, without `acknowledged`, named the upload: a stream that was read whole before its
    /// first request goes in one request, acknowledged only at its end).
    func killed(
        _ w: Workspace, producer: String, url: String, extra: [String] = [], environment: [String: String] = [:],
        acknowledged: Bool = true, when condition: @escaping ([String: Any]) -> Bool
    ) async throws -> String {
        let p = try startPipeline(
            w, producer: producer, ["upload", "-", url, "--limit-rate", "4M"] + extra, environment: environment)
        var id = ""
        try await eventually(timeout: .seconds(60)) {
            guard p.isRunning else { throw SupportError("ended before the kill: \(p.stderrSoFar)") }
            guard let first = try w.tokens().first, let upload = try w.token(first)["upload"] as? [String: Any],
                let stream = upload["stream"] as? [String: Any], condition(stream),
                acknowledged ? (upload["acknowledgedBytes"] as? Int ?? 0) > 0 : upload["uploadURL"] is String
            else { return false }
            id = first
            return true
        }
        let pids = try await runProcess("/usr/bin/pgrep", ["-f", "upload - \(url)"])
        for pid in pids.stdout.split(separator: "\n").compactMap({ Int32($0) }) { kill(pid, SIGKILL) }
        _ = try await p.wait()
        return id
    }
}
