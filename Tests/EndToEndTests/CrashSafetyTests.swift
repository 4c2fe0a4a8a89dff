import Foundation
import Testing

/// No interruption loses data or corrupts a file: kill -9 at any moment, garbage in `.part`, broken
/// tokens, a full disk, two processes on one token, pause from another shell, a network that goes away.
@Suite struct CrashSafetyTests {
    static let size = 4_000_000

    func tokenField(_ w: Workspace, _ id: String, _ part: String, _ key: String) throws -> Any? {
        (try w.token(id)[part] as? [String: Any])?[key]
    }

    @Test(arguments: [UInt64(1), 2])
    func downloadSurvivesKill9AtRandomMoments(seed: UInt64) async throws {
        let w = try Workspace()
        let digest = try makeRandomFile(path: w.path("www/f.bin"), size: Self.size, seed: seed)
        let nginx = try await NginxServer(root: w.path("www"), limitRate: 500_000)
        var rng = SeededGenerator(seed: seed)
        let url = nginx.url(for: "f.bin")
        var kills = 0
        for _ in 0..<4 {
            // The same command resumes its own token; a kill before the first checkpoint leaves none.
            let p = try w.start(["download", url, "-q"])
            try await Task.sleep(for: .milliseconds(Int.random(in: 150...700, using: &rng)))
            guard p.isRunning else { break }
            p.send(signal: SIGKILL)
            _ = try await p.wait()
            kills += 1
            if let id = try w.tokens().first {
                let committed = try tokenField(w, id, "download", "committedBytes") as? Int ?? -1
                #expect(committed <= w.size(w.out + "/f.bin.part"), "a token never claims bytes the file lacks")
            }
        }
        #expect(kills > 0)
        let r = try await w.run(["download", url, "--json"])
        #expect(r.status == 0, "\(r)")
        #expect(try sha256(file: w.out + "/f.bin") == digest)
        #expect(try w.tokens().isEmpty)
    }

    @Test func uploadSurvivesKill9AtRandomMoments() async throws {
        let w = try Workspace()
        let digest = try makeRandomFile(path: w.path("www/src.bin"), size: Self.size, seed: 7)
        let peer = try await UploadPeer()
        var rng = SeededGenerator(seed: 7)
        let args = [
            "upload", w.path("www/src.bin"), peer.url(for: "k.bin"), "--interop-version", "6", "--limit-rate", "2M",
            "-q",
        ]
        for _ in 0..<3 {
            let p = try w.start(args)
            try await Task.sleep(for: .milliseconds(Int.random(in: 200...600, using: &rng)))
            guard p.isRunning else { break }
            p.send(signal: SIGKILL)
            _ = try await p.wait()
        }
        let r = try await w.run(args.filter { $0 != "--limit-rate" && $0 != "2M" })
        #expect(r.status == 0, "\(r)")
        #expect(try peer.storedSHA256("k.bin") == digest)
    }

    @Test func garbageAfterTheCommittedOffsetIsCutAway() async throws {
        let w = try Workspace()
        let digest = try makeRandomFile(path: w.path("www/f.bin"), size: Self.size, seed: 3)
        let nginx = try await NginxServer(root: w.path("www"), limitRate: 500_000)
        let p = try w.start(["download", nginx.url(for: "f.bin"), "--json"])
        _ = try await p.waitForLine { $0.contains("\"progress\"") }
        try await eventually(timeout: .seconds(10)) { try !w.tokens().isEmpty }
        p.send(signal: SIGKILL)
        _ = try await p.wait()
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: w.out + "/f.bin.part"))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(repeating: 0xAB, count: 123_457))
        try handle.close()
        let r = try await w.run(["resume", try #require(try w.tokens().first)])
        #expect(r.status == 0, "\(r)")
        #expect(try sha256(file: w.out + "/f.bin") == digest)
    }

    @Test(arguments: ["zeros", "truncated", "newer"])
    func brokenTokenIsRefusedAndNothingIsTouched(kind: String) async throws {
        let w = try Workspace()
        _ = try makeRandomFile(path: w.path("www/f.bin"), size: Self.size, seed: 4)
        let nginx = try await NginxServer(root: w.path("www"), limitRate: 500_000)
        let p = try w.start(["download", nginx.url(for: "f.bin")])
        try await eventually(timeout: .seconds(10)) { try !w.tokens().isEmpty }
        p.send(signal: SIGTERM)
        #expect(try await p.wait().status == 75)
        let id = try #require(try w.tokens().first)
        let file = w.state + "/tokens/\(id).json"
        let original = try Data(contentsOf: URL(fileURLWithPath: file))
        let broken: Data
        switch kind {
        case "zeros": broken = Data(repeating: 0, count: original.count)
        case "truncated": broken = original.prefix(original.count / 2)
        default:
            broken = Data(
                String(decoding: original, as: UTF8.self).replacingOccurrences(
                    of: "\"version\" : 1", with: "\"version\" : 2"
                ).utf8)
        }
        try broken.write(to: URL(fileURLWithPath: file))
        let partBefore = try sha256(file: w.out + "/f.bin.part")
        let r = try await w.run(["resume", id])
        #expect(r.status == 65, "\(r)")
        #expect(r.stderr.split(separator: "\n").count == 1)
        #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == broken)
        #expect(try sha256(file: w.out + "/f.bin.part") == partBefore)
        // The same download command does not overwrite the broken token either.
        #expect(try await w.run(["download", nginx.url(for: "f.bin")]).status == 65)
        #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == broken)
    }

    @Test func unwritableStateFolderIsALocalError() async throws {
        let w = try Workspace()
        _ = try makeRandomFile(path: w.path("www/f.bin"), size: 100_000, seed: 5)
        let nginx = try await NginxServer(root: w.path("www"))
        #expect(FileManager.default.createFile(atPath: w.path("plainfile"), contents: Data()))
        let r = try await runProcess(
            resumectlBinary, ["download", nginx.url(for: "f.bin"), "--state-dir", w.path("plainfile/state")],
            currentDirectory: w.out)
        #expect(r.status == 74, "\(r)")
        #expect(r.stderr.split(separator: "\n").count == 1)
    }

    /// One connection, and four (whose plan is saved before the `.part` is sized).
    @Test(arguments: [[String](), ["--connections", "4"]])
    func fullDiskExits74AndTheTokenResumesLater(extra: [String]) async throws {
        let w = try Workspace()
        let digest = try makeRandomFile(path: w.path("www/f.bin"), size: Self.size, seed: extra.isEmpty ? 6 : 16)
        let nginx = try await NginxServer(root: w.path("www"))
        // A file-size limit makes write(2) fail as a full disk would.
        let limited = try await runProcess(
            "/usr/bin/prlimit",
            [
                "--fsize=1500000", resumectlBinary, "download", nginx.url(for: "f.bin"),
                "--state-dir", w.state, "--json",
            ] + extra, currentDirectory: w.out)
        #expect(limited.status == 74, "\(limited)")
        #expect(limited.stderr.split(separator: "\n").count == 1, "\(limited)")
        #expect(events(limited.stdout).first("failed")?["resumable"] as? Bool == true)
        let id = try #require(try w.tokens().first)
        #expect(limited.stderr.contains("resumectl resume \(id)"))
        let r = try await w.run(["resume", id])
        #expect(r.status == 0, "\(r)")
        #expect(try sha256(file: w.out + "/f.bin") == digest)
    }

    @Test func secondProcessOnOneTokenIsRefused() async throws {
        let w = try Workspace()
        let digest = try makeRandomFile(path: w.path("www/f.bin"), size: Self.size, seed: 8)
        let nginx = try await NginxServer(root: w.path("www"), limitRate: 500_000)
        let first = try w.start(["download", nginx.url(for: "f.bin"), "--json"])
        _ = try await first.waitForLine { $0.contains("\"started\"") }
        let second = try await w.run(["download", nginx.url(for: "f.bin")])
        #expect(second.status == 75, "\(second)")
        #expect(second.stderr.contains("pid \(first.pid)"), "\(second)")
        let done = try await first.wait()
        #expect(done.status == 0, "\(done)")
        #expect(try sha256(file: w.out + "/f.bin") == digest)
    }

    /// A list's small file has no token and no lock file before its first checkpoint: the lock of its `.part`
    /// keeps a second process out (whatever its state folder), one download or several connections, naming
    /// the pid, and leaves no token of the refused one.
    @Test func secondProcessOnAListFileBeforeItsFirstCheckpointIsRefused() async throws {
        let w = try Workspace()
        let digest = try makeRandomFile(path: w.path("www/f.bin"), size: 1_000_000, seed: 18)
        let nginx = try await NginxServer(root: w.path("www"), limitRate: 200_000)
        try nginx.url(for: "f.bin").write(toFile: w.path("list.txt"), atomically: true, encoding: .utf8)
        let first = try w.start(["download", "-i", w.path("list.txt"), "--checkpoint-interval", "0", "--json"])
        _ = try await first.waitForLine { $0.contains("\"progress\"") }
        #expect(try FileManager.default.contentsOfDirectory(atPath: w.path("state/tokens")).isEmpty)
        #expect(FileManager.default.fileExists(atPath: w.out + "/f.bin.part"))
        for extra in [[], ["--connections", "2"]] {
            let second = try await w.run(["download", nginx.url(for: "f.bin")] + extra)
            #expect(second.status == 75, "\(second)")
            // With several connections a note comes first: the file is too small to split.
            #expect(second.stderr.split(separator: "\n").count == (extra.isEmpty ? 1 : 2), "\(second)")
            #expect(second.stderr.split(separator: "\n").last?.contains("pid \(first.pid)") == true, "\(second)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: w.path("state/tokens")).isEmpty, "\(extra)")
        }
        let done = try await first.wait()
        #expect(done.status == 0, "\(done)")
        #expect(try sha256(file: w.out + "/f.bin") == digest)
        #expect(try FileManager.default.contentsOfDirectory(atPath: w.path("state/tokens")).isEmpty)
    }

    @Test func pauseFromAnotherShellDuringADownload() async throws {
        let w = try Workspace()
        let digest = try makeRandomFile(path: w.path("www/f.bin"), size: Self.size, seed: 9)
        let nginx = try await NginxServer(root: w.path("www"), limitRate: 300_000)
        let p = try w.start(["download", nginx.url(for: "f.bin"), "--json"])
        let started = try await p.waitForLine { $0.contains("\"started\"") }
        let id = try #require(events(started).first?["token"] as? String)
        try await Task.sleep(for: .milliseconds(500))
        let pause = try await w.run(["pause", id])
        #expect(pause.status == 0, "\(pause)")
        let offset = Int(pause.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        let stopped = try await p.wait()
        #expect(stopped.status == 75, "\(stopped)")
        #expect(events(stopped.stdout).first("paused")?["offset"] as? Int == offset)
        #expect(offset > 0 && offset == w.size(w.out + "/f.bin.part"))
        let again = try await w.run(["pause", id])
        #expect(again.status == 0 && again.stderr.contains("not running"), "\(again)")
        #expect(try await w.run(["resume", id]).status == 0)
        #expect(try sha256(file: w.out + "/f.bin") == digest)
    }

    /// A segmented download's bytes are in its segments, not in `committedBytes`: `pause` prints their sum.
    @Test func pauseFromAnotherShellDuringASegmentedDownload() async throws {
        let w = try Workspace()
        let digest = try makeRandomFile(path: w.path("www/f.bin"), size: Self.size, seed: 12)
        let nginx = try await NginxServer(root: w.path("www"), limitRate: 300_000)
        let p = try w.start(["download", nginx.url(for: "f.bin"), "--connections", "4", "--json"])
        let started = try await p.waitForLine { $0.contains("\"started\"") }
        let id = try #require(events(started).first?["token"] as? String)
        _ = try await p.waitForLine { $0.contains("\"progress\"") }
        let pause = try await w.run(["pause", id])
        #expect(pause.status == 0, "\(pause)")
        let offset = Int(pause.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        let stopped = try await p.wait()
        #expect(stopped.status == 75, "\(stopped)")
        #expect(offset > 0, "\(pause)")
        #expect(events(stopped.stdout).first("paused")?["offset"] as? Int == offset)
        #expect(try await w.run(["resume", id]).status == 0)
        #expect(try sha256(file: w.out + "/f.bin") == digest)
    }

    @Test func pauseFromAnotherShellDuringAnUpload() async throws {
        let w = try Workspace()
        let digest = try makeRandomFile(path: w.path("www/src.bin"), size: Self.size, seed: 10)
        let peer = try await UploadPeer()
        let p = try w.start(["upload", w.path("www/src.bin"), peer.url(for: "p.bin"), "--limit-rate", "300k", "--json"])
        _ = try await p.waitForLine { $0.contains("\"progress\"") }
        let id = try #require(try w.tokens().first)
        let pause = try await w.run(["pause", id])
        #expect(pause.status == 0, "\(pause)")
        #expect(try await p.wait().status == 75)
        let r = try await w.run(["resume", id])
        #expect(r.status == 0, "\(r)")
        #expect(try peer.storedSHA256("p.bin") == digest)
    }

    @Test func networkGoneForAWhileThenBack() async throws {
        let w = try Workspace()
        let digest = try makeRandomFile(path: w.path("www/f.bin"), size: Self.size, seed: 11)
        let nginx = try await NginxServer(root: w.path("www"))
        let proxy = try FaultProxy(upstreamPort: nginx.port, plan: [.cutAfterDownstream(bytes: 1_000_000)])
        proxy.setRefusing(true)
        let p = try w.start(["download", proxy.url(for: "f.bin"), "--retry-delay", "0.1", "--retries", "inf", "--json"])
        // Back only after the client has found it gone more than once.
        try await eventually(timeout: .seconds(30)) { proxy.connections.filter(\.refused).count >= 3 }
        proxy.setRefusing(false)
        let r = try await p.wait()
        #expect(r.status == 0, "\(r)")
        #expect(try sha256(file: w.out + "/f.bin") == digest)
        #expect(names(events(r.stdout)).filter { $0 == "retry" }.count >= 3)
    }

    @Test func silentConnectionIsDetectedAsAStall() async throws {
        let w = try Workspace()
        let digest = try makeRandomFile(path: w.path("www/f.bin"), size: Self.size, seed: 12)
        let nginx = try await NginxServer(root: w.path("www"))
        let proxy = try FaultProxy(upstreamPort: nginx.port, plan: [.stallAfterDownstream(bytes: 1_000_000)])
        let r = try await w.run([
            "download", proxy.url(for: "f.bin"), "--stall-timeout", "1", "--retry-delay", "0.05", "--json",
        ])
        #expect(r.status == 0, "\(r)")
        #expect(try sha256(file: w.out + "/f.bin") == digest)
        #expect((events(r.stdout).first("retry")?["error"] as? String)?.contains("no data") == true, "\(r.stdout)")
    }

    @Test func silentUploadIsDetectedAsAStall() async throws {
        let w = try Workspace()
        let digest = try makeRandomFile(path: w.path("www/src.bin"), size: Self.size, seed: 13)
        let peer = try await UploadPeer()
        let proxy = try FaultProxy(
            upstreamPort: peer.port,
            plan: [.stallAfterUpstream(bytes: 1_500_000).throttled(bytesPerSecond: 5_000_000).afterInterimResponse()])
        peer.advertise(origin: proxy.baseURL)
        let r = try await w.run([
            "upload", w.path("www/src.bin"), proxy.url(for: "s.bin"), "--interop-version", "6",
            "--stall-timeout", "1", "--retry-delay", "0.05", "--json",
        ])
        #expect(r.status == 0, "\(r)")
        #expect(try peer.storedSHA256("s.bin") == digest)
        #expect(names(events(r.stdout)).contains("retry"))
    }
}
