import Foundation
import Testing

/// `pause` and `cancel` signal only the process that runs the transfer: a lock or status file left behind
/// (a kill -9, a reboot) may name a pid that another process has since.
@Suite struct StaleProcessFileTests {
    @Test func pauseAndCancelLeaveAnUnrelatedProcessAlone() async throws {
        let w = try Workspace()
        let content = randomBytes(count: 2_000_000, seed: 50)
        let server = try await MisbehavingServer(content: content, behaviors: [.cutsEveryResponse(afterBytes: 800_000)])
        let cut = try await w.run(["download", server.url(for: "f.bin"), "--retries", "0"])
        #expect(cut.status == 75, "\(cut)")
        let id = try #require(try w.tokens().first)

        let sleeper = Process()
        sleeper.executableURL = URL(fileURLWithPath: "/bin/sleep")
        sleeper.arguments = ["60"]
        try sleeper.run()
        defer { sleeper.terminate() }
        let pid = sleeper.processIdentifier
        // Files as a transfer whose process started at boot tick 1 left them: its pid is the sleep's now.
        try "\(pid) 1\n".write(toFile: w.state + "/tokens/\(id).lock", atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: w.state + "/run", withIntermediateDirectories: true)
        let status = #"{"pid":\#(pid),"started":1,"state":"running","updatedAt":"2026-01-01T00:00:00Z"}"#
        try status.write(toFile: w.state + "/run/\(id).json", atomically: true, encoding: .utf8)

        let pause = try await w.run(["pause", id, "--wait", "2"])
        #expect(pause.status == 0 && pause.stderr.contains("\(id) is not running"), "\(pause)")
        try await Task.sleep(for: .milliseconds(300))
        #expect(sleeper.isRunning)

        // A status file of an older resumectl names no start at all: as stale.
        try #"{"pid":\#(pid),"state":"running","updatedAt":"2026-01-01T00:00:00Z"}"#
            .write(toFile: w.state + "/run/\(id).json", atomically: true, encoding: .utf8)
        let cancel = try await w.run(["cancel", id])
        #expect(cancel.status == 0 && cancel.stderr.contains("cancelled \(id)"), "\(cancel)")
        try await Task.sleep(for: .milliseconds(300))
        #expect(sleeper.isRunning)
        #expect(try w.tokens().isEmpty)
    }
}
