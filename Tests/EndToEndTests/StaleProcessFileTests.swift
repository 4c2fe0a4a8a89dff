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
        try FileManager.default.createDirectory(atPath: w.state + "/run", withIntermediateDirectories: true)

        // Files as a transfer whose process started at boot tick 1 left them: its pid is another's now.
        let first = try await Bystander(w, "first")
        defer { first.process.terminate() }
        try "\(first.pid) 1\n".write(toFile: w.state + "/tokens/\(id).lock", atomically: true, encoding: .utf8)
        try #"{"pid":\#(first.pid),"started":1,"state":"running","updatedAt":"2026-01-01T00:00:00Z"}"#
            .write(toFile: w.state + "/run/\(id).json", atomically: true, encoding: .utf8)
        let pause = try await w.run(["pause", id, "--wait", "2"])
        #expect(pause.status == 0 && pause.stderr.contains("\(id) is not running"), "\(pause)")
        #expect(try await first.untouched())

        // The lock is held (here by the test itself), but not by the pid its file names.
        unlink(w.state + "/run/\(id).json")
        let held = try await Bystander(w, "held")
        defer { held.process.terminate() }
        let fd = open(w.state + "/tokens/\(id).lock", O_RDWR | O_TRUNC)
        try #require(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0)
        _ = "\(held.pid)\n".withCString { write(fd, $0, strlen($0)) }
        let refused = try await w.run(["pause", id, "--wait", "2"])
        #expect(refused.status == 0 && refused.stderr.contains("\(id) is not running"), "\(refused)")
        #expect(try await held.untouched())
        close(fd)

        // A status file of an older resumectl names no start at all: as stale.
        let second = try await Bystander(w, "second")
        defer { second.process.terminate() }
        try #"{"pid":\#(second.pid),"state":"running","updatedAt":"2026-01-01T00:00:00Z"}"#
            .write(toFile: w.state + "/run/\(id).json", atomically: true, encoding: .utf8)
        let cancel = try await w.run(["cancel", id])
        #expect(cancel.status == 0 && cancel.stderr.contains("cancelled \(id)"), "\(cancel)")
        #expect(try await second.untouched())
        #expect(try w.tokens().isEmpty)
    }

    /// A live process that has nothing to do with resumectl and notes a SIGTERM in a file (the test runner's
    /// children inherit SIGTERM blocked, so a plain `sleep` would not show one).
    struct Bystander {
        let process = Process()
        let marker: String
        var pid: Int32 { process.processIdentifier }

        init(_ w: Workspace, _ name: String) async throws {
            marker = w.path(name + ".signalled")
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = [
                "python3", "-c",
                """
                import signal, sys, time
                signal.signal(signal.SIGTERM, lambda *_: (open(sys.argv[1], "w").write("TERM"), sys.exit(0)))
                signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGTERM])
                open(sys.argv[1] + ".ready", "w").close()
                time.sleep(60)
                """, marker,
            ]
            try process.run()
            for _ in 0..<100 where !w.exists(marker + ".ready") { try await Task.sleep(for: .milliseconds(50)) }
            try #require(w.exists(marker + ".ready"))
        }

        /// Still alive and never signalled, a moment after.
        func untouched() async throws -> Bool {
            try await Task.sleep(for: .milliseconds(300))
            return !FileManager.default.fileExists(atPath: marker) && kill(pid, 0) == 0
        }
    }
}
