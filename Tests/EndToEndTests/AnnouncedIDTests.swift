import Foundation
import Testing

/// Every id resumectl announces can be resumed, at any instant; a resume never splices two files, even
/// when the server's validator stays the same for new bytes; local failures are plain sentences.
@Suite struct AnnouncedIDTests {
    static let size = 4_000_000

    /// The id of the first `started` event printed so far, if any.
    private func announcedID(_ stdout: String) -> String? {
        for line in stdout.split(separator: "\n") where line.contains("\"started\"") {
            if let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] {
                return object["token"] as? String
            }
        }
        return nil
    }

    @Test(arguments: [100, 500, 800])
    func downloadKilledAtAnyMomentResumesByTheIDItAnnounced(afterMilliseconds delay: Int) async throws {
        let w = try Workspace()
        let digest = try makeRandomFile(path: w.path("www/f.bin"), size: Self.size, seed: UInt64(delay))
        let nginx = try await NginxServer(root: w.path("www"), limitRate: 2_000_000)
        let p = try w.start(["download", nginx.url(for: "f.bin"), "--json"])
        try await Task.sleep(for: .milliseconds(delay))
        p.send(signal: SIGKILL)
        let killed = try await p.wait()
        guard let id = announcedID(killed.stdout) else {
            // Nothing was announced yet; the same command carries on.
            let again = try await w.run(["download", nginx.url(for: "f.bin"), "-q"])
            #expect(again.status == 0, "\(again)")
            #expect(try sha256(file: w.out + "/f.bin") == digest)
            return
        }
        // The id answers: a token, or (when the kill came after the end on a loaded machine) a result record.
        #expect(
            try w.tokens().contains(id) || w.exists(w.state + "/results/\(id).json"),
            "the announced id \(id) is on disk")
        let r = try await w.run(["resume", id])
        #expect(r.status == 0, "\(r)")
        #expect(r.stdoutLines == [w.out + "/f.bin"])
        #expect(try sha256(file: w.out + "/f.bin") == digest)
    }

    @Test(arguments: [100, 500, 800])
    func uploadKilledAtAnyMomentResumesByTheIDItAnnounced(afterMilliseconds delay: Int) async throws {
        let w = try Workspace()
        let digest = try makeRandomFile(path: w.path("www/src.bin"), size: Self.size, seed: UInt64(delay) + 1)
        let peer = try await UploadPeer()
        let args = [
            "upload", w.path("www/src.bin"), peer.url(for: "k.bin"), "--interop-version", "6", "--limit-rate", "2M",
            "--json",
        ]
        let p = try w.start(args)
        try await Task.sleep(for: .milliseconds(delay))
        p.send(signal: SIGKILL)
        let killed = try await p.wait()
        guard let id = announcedID(killed.stdout) else {
            // Killed before it said anything (a loaded machine starts a debug build slowly): the same command carries
            // on.
            let again = try await w.run(args.filter { $0 != "--json" })
            #expect(again.status == 0, "\(again)")
            #expect(try peer.storedSHA256("k.bin") == digest)
            return
        }
        #expect(
            try w.tokens().contains(id) || w.exists(w.state + "/results/\(id).json"),
            "the announced id \(id) is on disk")
        let r = try await w.run(["resume", id])
        #expect(r.status == 0, "\(r)")
        #expect(try peer.storedSHA256("k.bin") == digest)
    }

    @Test func eightKillsInARowWithGarbageInBetween() async throws {
        let w = try Workspace()
        let digest = try makeRandomFile(path: w.path("www/f.bin"), size: Self.size, seed: 88)
        let nginx = try await NginxServer(root: w.path("www"), limitRate: 1_000_000)
        var rng = SeededGenerator(seed: 88)
        let first = try w.start(["download", nginx.url(for: "f.bin"), "--json"])
        let line = try await first.waitForLine { $0.contains("\"started\"") }
        let id = try #require(announcedID(line))
        first.send(signal: SIGKILL)
        _ = try await first.wait()
        for round in 0..<8 {
            let p = try w.start(["resume", id, "-q"])
            try await Task.sleep(for: .milliseconds(Int.random(in: 50...600, using: &rng)))
            p.send(signal: SIGKILL)
            _ = try await p.wait()
            if round == 4, w.exists(w.out + "/f.bin.part") {
                let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: w.out + "/f.bin.part"))
                try handle.seekToEnd()
                try handle.write(contentsOf: Data(repeating: 0x5A, count: 77_777))
                try handle.close()
            }
        }
        let r = try await w.run(["resume", id])
        #expect(r.status == 0, "\(r)")
        #expect(try sha256(file: w.out + "/f.bin") == digest)
    }

    @Test func listEventsNeverCarryAnIDThatResumeRejects() async throws {
        let w = try Workspace()
        var lines: [String] = []
        for i in 0..<12 {
            _ = try makeRandomFile(path: w.path("www/s\(i).bin"), size: 30_000, seed: UInt64(i))
            lines.append("s\(i).bin")
        }
        _ = try makeRandomFile(path: w.path("www/big.bin"), size: 3_000_000, seed: 99)
        lines.append("big.bin")
        let nginx = try await NginxServer(root: w.path("www"), limitRate: 1_500_000)
        try lines.map { nginx.url(for: $0) }.joined(separator: "\n").write(
            toFile: w.path("list.txt"), atomically: true, encoding: .utf8)
        let r = try await w.run(["download", "-i", w.path("list.txt"), "-o", w.out, "--json"])
        #expect(r.status == 0, "\(r)")
        let all = events(r.stdout)
        let ids = Set(all.compactMap { $0["token"] as? String })
        #expect(all.contains { $0["token"] is NSNull }, "small files that never had a token say so with null")
        #expect(!ids.isEmpty, "the big file passed a checkpoint and announced its id")
        for id in ids {
            let again = try await w.run(["resume", id])
            #expect(again.status == 0, "resume \(id): \(again)")
        }
    }

    @Test(arguments: ["restart", "fail"])
    func newBytesUnderAnUnchangedValidatorAreNeverSpliced(onChange: String) async throws {
        let w = try Workspace()
        let first = randomBytes(count: 3_000_000, seed: 5)
        let second = randomBytes(count: 3_000_000, seed: 6)
        let server = try await MisbehavingServer(
            content: first, behaviors: [.lyingValidators, .cutsEveryResponse(afterBytes: 1_000_000)])
        let cut = try await w.run([
            "download", server.url(), "-o", "f.bin", "--retries", "0", "--on-change", onChange, "--json",
        ])
        #expect(cut.status == 75, "\(cut)")
        let id = try #require(try w.tokens().first)
        server.replaceContent(second)
        let r = try await w.run(["resume", id, "--json"])
        if onChange == "restart" {
            #expect(r.status == 0, "\(r)")
            #expect(names(events(r.stdout)).contains("restarted"))
            #expect(try sha256(file: w.out + "/f.bin") == sha256(second))
        } else {
            #expect(r.status == 1, "\(r)")
            #expect(r.stderr.contains("differ"), "\(r)")
            #expect(!w.exists(w.out + "/f.bin"))
        }
    }

    @Test func resumeURLToAnotherFileWithTheSameETagIsRefused() async throws {
        let w = try Workspace()
        let digestA = try makeRandomFile(path: w.path("www/a.bin"), size: Self.size, seed: 21)
        _ = try makeRandomFile(path: w.path("www/b.bin"), size: Self.size, seed: 22)
        // Same size, same mtime: nginx gives both the same ETag.
        for name in ["a.bin", "b.bin"] {
            var times = [timespec(tv_sec: 1_790_000_000, tv_nsec: 0), timespec(tv_sec: 1_790_000_000, tv_nsec: 0)]
            #expect(utimensat(AT_FDCWD, w.path("www/\(name)"), &times, 0) == 0)
        }
        let nginx = try await NginxServer(root: w.path("www"), limitRate: 400_000)
        let p = try w.start(["download", nginx.url(for: "a.bin"), "-o", "f.bin", "--json"])
        // Paused once past 200 kB, however slowly a loaded machine runs the test.
        _ = try await p.waitForLine { line in
            guard line.contains("\"progress\""),
                let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            else { return false }
            return (object["bytes"] as? Int ?? 0) > 200_000
        }
        p.send(signal: SIGTERM)
        let paused = try await p.wait()
        #expect(paused.status == 75, "\(paused)")
        let id = try #require(try w.tokens().first)
        let committed = try #require((try w.token(id)["download"] as? [String: Any])?["committedBytes"] as? Int)
        #expect(committed > 100_000)

        let refused = try await w.run(["resume", id, "--url", nginx.url(for: "b.bin")])
        #expect(refused.status == 1, "\(refused)")
        #expect(refused.stderr.contains("refusing"), "\(refused)")
        #expect(refused.stderr.split(separator: "\n").count == 1, "\(refused)")
        #expect(!w.exists(w.out + "/f.bin"))
        #expect(try w.token(id)["url"] as? String == nginx.url(for: "a.bin"))

        let r = try await w.run(["resume", id])
        #expect(r.status == 0, "\(r)")
        #expect(try sha256(file: w.out + "/f.bin") == digestA)
    }

    @Test func localFailuresArePlainSentences() async throws {
        let w = try Workspace()
        _ = try makeRandomFile(path: w.path("www/f.bin"), size: 100_000, seed: 1)
        let nginx = try await NginxServer(root: w.path("www"))
        try "{not json".write(toFile: w.path("broken.json"), atomically: true, encoding: .utf8)
        let cases: [(args: [String], state: String, status: Int32, words: String)] = [
            (
                ["download", nginx.url(for: "f.bin")], "/proc/nope", 74,
                "cannot create the state folder /proc/nope: No such file or directory"
            ),
            (
                ["download", nginx.url(for: "f.bin")], w.path("www/f.bin") + "/state", 74,
                "cannot create the state folder \(w.path("www/f.bin"))/state: Not a directory"
            ),
            (["download", nginx.url(for: "f.bin"), "-o", w.path("missing/f.bin")], w.state, 73, w.path("missing")),
            (["resume", w.path("broken.json")], w.state, 65, w.path("broken.json")),
        ]
        for c in cases {
            let r = try await runProcess(resumectlBinary, c.args + ["--state-dir", c.state], currentDirectory: w.out)
            #expect(r.status == c.status, "\(c.args): \(r)")
            let lines = r.stderr.split(separator: "\n")
            #expect(lines.count == 1, "\(r)")
            #expect(r.stderr.contains(c.words), "\(r)")
            for dump in ["Error(", "code:", "NSUnderlying", "userInfo"] { #expect(!r.stderr.contains(dump), "\(r)") }
        }
        // An output folder that takes no new files: a read-only one, or for root (whom permissions do not
        // stop) sysfs, where even root cannot create a file. The token written at the start goes too.
        let readOnly: String
        if getuid() == 0 {
            readOnly = "/sys/kernel"
        } else {
            readOnly = w.path("ro")
            try FileManager.default.createDirectory(
                atPath: readOnly, withIntermediateDirectories: false,
                attributes: [.posixPermissions: 0o555])
        }
        let refused = try await w.run(["download", nginx.url(for: "f.bin"), "-o", readOnly + "/f.bin"])
        #expect(refused.status == 73, "\(refused)")
        #expect(refused.stderr.split(separator: "\n").count == 1, "\(refused)")
        #expect(refused.stderr.contains(readOnly + "/f.bin"), "\(refused)")
        for dump in ["Error(", "code:", "NSUnderlying", "userInfo"] {
            #expect(!refused.stderr.contains(dump), "\(refused)")
        }
        #expect(try w.tokens().isEmpty, "no token is left for a download that could not create its file")
        let full = try await runProcess(
            "/usr/bin/prlimit",
            [
                "--fsize=50000", resumectlBinary, "download", nginx.url(for: "f.bin"),
                "--state-dir", w.state,
            ], currentDirectory: w.out)
        #expect(full.status == 74, "\(full)")
        #expect(full.stderr.contains(w.out + "/f.bin.part"), "\(full)")
        #expect(full.stderr.contains("File too large"), "\(full)")
    }
}
