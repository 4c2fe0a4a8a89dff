import Foundation
import Testing

/// What the suites of stream uploads share: `producer | resumectl …` through bash, the spool folder,
/// and a kill -9 at a chosen moment of the token.
protocol StreamPipelines {}

extension StreamPipelines {
    /// `producer | resumectl ARGS`, started in bash; its last stderr line is `status=N` (resumectl's status).
    func startPipeline(_ w: Workspace, producer: String, _ args: [String], environment: [String: String] = [:]) throws -> RunningProcess {
        let quoted = ([resumectlBinary] + args + ["--state-dir", w.state]).map { "'" + $0 + "'" }.joined(separator: " ")
        let script = "\(producer) | \(quoted); echo \"status=${PIPESTATUS[1]}\" >&2"
        return try RunningProcess("/bin/bash", ["-c", script], environment: environment, currentDirectory: w.out)
    }

    func pipeline(
        _ w: Workspace, producer: String, _ args: [String], environment: [String: String] = [:], timeout: Duration = .seconds(180)
    ) async throws -> (ProcessResult, Int32) {
        let r = try await startPipeline(w, producer: producer, args, environment: environment).wait(timeout: timeout)
        return (r, status(r))
    }

    func status(_ r: ProcessResult) -> Int32 {
        let line = r.stderr.split(separator: "\n").last { $0.hasPrefix("status=") } ?? ""
        return Int32(line.dropFirst(7)) ?? -1
    }

    func spoolFiles(_ w: Workspace) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: w.state + "/spool")) ?? []
    }

    /// Starts a slow stream upload and kills it (SIGKILL) once its token shows `condition` and the server
    /// acknowledged bytes (or, without `acknowledged`, named the upload: a stream that was read whole before its
    /// first request goes in one request, acknowledged only at its end).
    func killed(
        _ w: Workspace, producer: String, url: String, extra: [String] = [], environment: [String: String] = [:],
        acknowledged: Bool = true, when condition: @escaping ([String: Any]) -> Bool
    ) async throws -> String {
        let p = try startPipeline(w, producer: producer, ["upload", "-", url, "--limit-rate", "4M"] + extra, environment: environment)
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
