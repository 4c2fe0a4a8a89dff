import Foundation
import Testing

/// `--connections N` (one file over parallel ranges) and `-i LIST --parallel N` (many files).
@Suite struct ManyConnectionsTests {
    static let size = 6_000_000

    @Test func segmentedDownloadIsByteExact() async throws {
        let w = try Workspace()
        let digest = try makeRandomFile(path: w.path("www/f.bin"), size: Self.size, seed: 31)
        let nginx = try await NginxServer(root: w.path("www"))
        let r = try await w.run(["download", nginx.url(for: "f.bin"), "--connections", "4", "--json"])
        #expect(r.status == 0, "\(r)")
        #expect(try sha256(file: w.out + "/f.bin") == digest)
        #expect(events(r.stdout).first("completed")?["sha256"] as? String == digest)
        let log = nginx.accessLog()
        #expect(log.filter { $0.hasPrefix("206 GET") && $0.contains("if_range=\"\\x22") }.count == 4, "\(log)")
        #expect(log.filter { $0.contains(" HEAD ") }.count == 1)
    }

    @Test func segmentedDownloadResumesEverySegment() async throws {
        let w = try Workspace()
        let digest = try makeRandomFile(path: w.path("www/f.bin"), size: 3_400_000, seed: 32)
        let nginx = try await NginxServer(root: w.path("www"), limitRate: 150_000)
        let p = try w.start(["download", nginx.url(for: "f.bin"), "--connections", "3", "--json"])
        _ = try await p.waitForLine { $0.contains("\"progress\"") }
        try await Task.sleep(for: .milliseconds(1500))
        p.send(signal: SIGTERM)
        #expect(try await p.wait().status == 75)
        let id = try #require(try w.tokens().first)
        let segments = try #require((try w.token(id)["download"] as? [String: Any])?["segments"] as? [[String: Any]])
        #expect(segments.count == 3)
        let committed = segments.compactMap { $0["committed"] as? Int }
        #expect(committed.allSatisfy { $0 > 0 }, "\(segments)")
        let r = try await w.run(["resume", id])
        #expect(r.status == 0, "\(r)")
        #expect(try sha256(file: w.out + "/f.bin") == digest)
        // Each segment continued from its committed offset, asking again for up to 64 KiB before it (the overlap).
        let ranges = nginx.accessLog().suffix(3).compactMap { line in
            line.split(separator: " ").first { $0.hasPrefix("range=") }.map(String.init)
        }
        for (segment, done) in zip(segments, committed) {
            let start = segment["start"] as? Int ?? -1
            #expect(ranges.contains { $0.hasPrefix("range=\"bytes=\(start + done - min(done, 65_536))-") }, "\(ranges)")
        }
    }

    @Test func serverWithoutRangesFallsBackToOneConnection() async throws {
        let w = try Workspace()
        let content = randomBytes(count: 3_000_000, seed: 33)
        let server = try await MisbehavingServer(content: content, behaviors: [.ignoresRange])
        let r = try await w.run(["download", server.url(), "-o", "x.bin", "--connections", "4"])
        #expect(r.status == 0, "\(r)")
        #expect(try sha256(file: w.out + "/x.bin") == sha256(content))
        #expect(r.stderr.contains("using one connection"), "\(r)")
        #expect(r.stderr.split(separator: "\n").count == 1)
    }

    @Test func segmentedDownloadOfAChangedFileStartsOver() async throws {
        let w = try Workspace()
        let first = randomBytes(count: 4_000_000, seed: 34)
        let server = try await MisbehavingServer(content: first, behaviors: [.cutsEveryResponse(afterBytes: 400_000)])
        #expect(
            try await w.run(["download", server.url(), "-o", "c.bin", "--connections", "4", "--retries", "0"]).status
                == 75)
        let second = randomBytes(count: 4_000_000, seed: 35)
        server.replaceContent(second)
        let r = try await w.run(["resume", try #require(try w.tokens().first), "--json", "--retry-delay", "0.01"])
        #expect(r.status == 0, "\(r)")
        #expect(try sha256(file: w.out + "/c.bin") == sha256(second))
        #expect(events(r.stdout).first("restarted")?["reason"] as? String == "the file changed on the server")
    }

    /// The `--on-change` of the command given now decides, with segments as with one connection (the token's
    /// value is the earlier command's).
    @Test(arguments: [("fail", "restart", Int32(0)), ("restart", "fail", Int32(1))])
    func segmentedDownloadOfAChangedFileFollowsTheOnChangeGivenNow(earlier: String, now: String, status: Int32)
        async throws
    {
        let w = try Workspace()
        let first = randomBytes(count: 4_000_000, seed: 36)
        let server = try await MisbehavingServer(content: first, behaviors: [.cutsEveryResponse(afterBytes: 400_000)])
        let cut = try await w.run([
            "download", server.url(), "-o", "c.bin", "--connections", "4", "--retries", "0", "--on-change", earlier,
        ])
        #expect(cut.status == 75, "\(cut)")
        let second = randomBytes(count: 4_000_000, seed: 37)
        server.replaceContent(second)
        let r = try await w.run([
            "download", server.url(), "-o", "c.bin", "--connections", "4", "--retry-delay", "0.01", "--on-change", now,
        ])
        #expect(r.status == status, "\(r)")
        if status == 0 {
            #expect(try sha256(file: w.out + "/c.bin") == sha256(second))
        } else {
            #expect(r.stderr.contains("changed") && r.stderr.contains("--on-change fail"), "\(r)")
            #expect(!FileManager.default.fileExists(atPath: w.out + "/c.bin"))
        }
    }

    @Test(arguments: ["0", "17", "x"])
    func badConnectionCountsAreUsageErrors(value: String) async throws {
        let w = try Workspace()
        let r = try await w.run(["download", "http://127.0.0.1:9/f", "--connections", value])
        #expect(r.status == 64, "\(r)")
    }

    @Test func listDownloadsEveryFileAndReportsTheBadLines() async throws {
        let w = try Workspace()
        try w.dir.subdirectory("www/many")
        var digests: [String: String] = [:]
        for i in 0..<40 {
            digests["f\(i).bin"] = try makeRandomFile(
                path: w.path("www/many/f\(i).bin"), size: 50_000 + i, seed: UInt64(100 + i))
        }
        let nginx = try await NginxServer(root: w.path("www"))
        var lines = ["# a comment", ""]
        for i in 0..<40 { lines.append(nginx.url(for: "many/f\(i).bin")) }
        lines.append(nginx.url(for: "many/f0.bin"))  // a repeat
        lines.append(nginx.url(for: "many/f1.bin") + "   renamed.bin")
        lines.append("ftp://example.com/x")
        lines.append(nginx.url(for: "many/missing.bin"))
        try lines.joined(separator: "\n").write(toFile: w.path("list.txt"), atomically: true, encoding: .utf8)

        // 8 at a time: two session pools (one per 4 workers, one per core) wherever there are 2 cores.
        let r = try await w.run(["download", "-i", w.path("list.txt"), "--parallel", "8"])
        #expect(r.status == 1, "\(r)")
        #expect(r.stdout.split(separator: "\n").count == 41)
        for (name, digest) in digests { #expect(try sha256(file: w.out + "/" + name) == digest) }
        #expect(try sha256(file: w.out + "/renamed.bin") == digests["f1.bin"])
        #expect(r.stderr.contains("line 45: unsupported scheme"))
        #expect(r.stderr.contains("skipped repeated lines 43"))
        #expect(r.stderr.contains("missing.bin: the server answered 404"))
        #expect(r.stderr.contains("2 of 43 downloads failed"))
        #expect(try w.tokens().isEmpty)
        // Connections are kept open from one file to the next.
        #expect(nginx.accessLog().count == 42)
    }

    @Test func listOfGoodURLsExitsZero() async throws {
        let w = try Workspace()
        try w.dir.subdirectory("www/few")
        let sums = try (0..<5).map {
            try makeRandomFile(path: w.path("www/few/g\($0).bin"), size: 10_000, seed: UInt64($0))
        }
        let nginx = try await NginxServer(root: w.path("www"))
        try (0..<5).map { nginx.url(for: "few/g\($0).bin") }.joined(separator: "\n").write(
            toFile: w.path("l.txt"), atomically: true, encoding: .utf8)
        try w.dir.subdirectory("dest")
        let r = try await w.run(["download", "-i", w.path("l.txt"), "-o", w.path("dest"), "--json"])
        #expect(r.status == 0, "\(r)")
        #expect(names(events(r.stdout)).filter { $0 == "completed" }.count == 5)
        // JSON results carry each file's SHA-256, worked out as its bytes arrived.
        #expect(
            Set(
                events(r.stdout).filter { $0["event"] as? String == "completed" }.compactMap { $0["sha256"] as? String }
            ) == Set(sums))
        #expect(r.stderr.isEmpty)
        // Published in a batch: every file in place, no `.part` left, no token or lock file ever made.
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: w.path("dest")).sorted() == (0..<5).map { "g\($0).bin" }
        )
        #expect(try FileManager.default.contentsOfDirectory(atPath: w.path("state/tokens")).isEmpty)
    }

    /// A list's fresh small files are fetched in one pass on the network threads; whatever that pass cannot
    /// finish goes to the workers: a `.part` an earlier run left, a 404 (settled from the pass's answer, not
    /// asked twice), a file larger than the pass takes (asked again: the pass drops that answer after its
    /// head), a connection cut in the middle of a small file's body (retried). Counted at nginx and at the proxy.
    @Test func smallFilesGoInOnePassAndEverythingElseToTheWorkers() async throws {
        let w = try Workspace()
        try w.dir.subdirectory("www/m")
        try w.dir.subdirectory("dest")
        var digests: [String: String] = [:]
        for i in 0..<24 {
            digests["s\(i).bin"] = try makeRandomFile(
                path: w.path("www/m/s\(i).bin"), size: 30_000 + i, seed: UInt64(500 + i))
        }
        digests["big.bin"] = try makeRandomFile(path: w.path("www/m/big.bin"), size: 3_000_000, seed: 77)
        let nginx = try await NginxServer(root: w.path("www"))
        // The first connection is cut 10,000 bytes into its answer (one of the first small files).
        let proxy = try FaultProxy(upstreamPort: nginx.port, plan: [Fault.cutAfterDownstream(bytes: 10_000)])
        defer { proxy.stop() }
        try Data(repeating: 0x55, count: 1234).write(to: URL(fileURLWithPath: w.path("dest/s3.bin.part")))
        let lines =
            (0..<12).map { proxy.baseURL + "/m/s\($0).bin" } + [
                proxy.baseURL + "/m/missing.bin", proxy.baseURL + "/m/big.bin",
            ]
            + (12..<24).map { proxy.baseURL + "/m/s\($0).bin" }
        try lines.joined(separator: "\n").write(toFile: w.path("l.txt"), atomically: true, encoding: .utf8)
        let r = try await w.run([
            "download", "-i", w.path("l.txt"), "-o", w.path("dest"), "--parallel", "4", "--retry-delay", "0.1",
        ])
        #expect(r.status == 1, "\(r)")
        #expect(r.stderr.contains("missing.bin: the server answered 404"), "\(r.stderr)")
        for (name, digest) in digests { #expect(try sha256(file: w.path("dest/" + name)) == digest, "\(name)") }
        #expect(try FileManager.default.contentsOfDirectory(atPath: w.path("dest")).count == 25, "no .part left")
        #expect(try w.tokens().isEmpty)
        let asked = { (name: String) in nginx.accessLog().filter { $0.contains("GET /m/\(name) ") }.count }
        #expect(asked("missing.bin") == 1)
        #expect(asked("big.bin") == 2)
        #expect(asked("s3.bin") == 1)
        let first = try #require(proxy.connections.first)
        #expect(first.triggered, "the cut never happened")
        let cut = try #require(
            first.requestLines.first?.split(separator: " ").dropFirst().first.map {
                String($0.split(separator: "/").last ?? "")
            })
        for i in 0..<24 {
            #expect(asked("s\(i).bin") == ("s\(i).bin" == cut ? 2 : 1), "s\(i).bin (the cut one: \(cut))")
        }
    }

    /// A list being fetched in the small-file pass: `count` files of 400,000 bytes in `www/NAME/`, `parallel` at a
    /// time at 100 KB/s (about 4 s a file: still in the pass, as no checkpoint interval ends it), started with `--json`
    /// and past its first `progress`. `args` runs the same list again, into `dest`.
    private struct ListInThePass {
        let nginx: NginxServer
        let args: [String]
        let digests: [String: String]
        let process: RunningProcess

        init(_ w: Workspace, name: String, count: Int, parallel: Int, seed: UInt64) async throws {
            try w.dir.subdirectory("www/" + name)
            try w.dir.subdirectory("dest")
            var digests: [String: String] = [:]
            for i in 0..<count {
                digests["\(name)\(i).bin"] = try makeRandomFile(
                    path: w.path("www/\(name)/\(name)\(i).bin"), size: 400_000, seed: seed + UInt64(i))
            }
            nginx = try await NginxServer(root: w.path("www"), limitRate: 100_000)
            try (0..<count).map { [nginx] in nginx.url(for: "\(name)/\(name)\($0).bin") }.joined(separator: "\n")
                .write(toFile: w.path("l.txt"), atomically: true, encoding: .utf8)
            args = [
                "download", "-i", w.path("l.txt"), "-o", w.path("dest"), "--parallel", "\(parallel)",
                "--checkpoint-interval", "0",
            ]
            self.digests = digests
            process = try w.start(args + ["--json"])
            _ = try await process.waitForLine { $0.contains("\"progress\"") }
        }
    }

    /// Ctrl-C during the small-file pass: the files in flight had no token and nothing of them stays; each says
    /// so in its line, the list exits 130, and the same command fetches everything whole.
    @Test func listStoppedInTheSmallFilePassLeavesNothingAndRunsAgain() async throws {
        let w = try Workspace()
        let list = try await ListInThePass(w, name: "p", count: 6, parallel: 3, seed: 700)
        let p = list.process
        p.send(signal: SIGINT)
        let stopped = try await p.wait()
        #expect(stopped.status == 130, "\(stopped)")
        #expect(stopped.stderr.contains("stopped before its first checkpoint"), "\(stopped.stderr)")
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: w.path("dest")).filter { $0.hasSuffix(".part") }.isEmpty
        )
        #expect(try w.tokens().isEmpty)
        let again = try await w.run(list.args)
        #expect(again.status == 0, "\(again)")
        for (name, digest) in list.digests { #expect(try sha256(file: w.path("dest/" + name)) == digest, "\(name)") }
    }

    /// `kill -9` during the small-file pass: its files had no token yet and only their `.part` under a name, so
    /// no whole file and no token is left, and the same command fetches everything whole.
    @Test func listKilledInTheSmallFilePassLeavesNoTokenAndRunsAgainWhole() async throws {
        let w = try Workspace()
        let list = try await ListInThePass(w, name: "k", count: 4, parallel: 4, seed: 720)
        let p = list.process
        let isPart: (String) -> Bool = { $0.hasSuffix(".part") }
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: w.path("dest")).allSatisfy(isPart),
            "only .part files while they run")
        #expect(p.isRunning)
        p.send(signal: SIGKILL)
        _ = try await p.wait()
        #expect(try FileManager.default.contentsOfDirectory(atPath: w.path("dest")).allSatisfy(isPart))
        #expect(try w.tokens().isEmpty)
        let again = try await w.run(list.args)
        #expect(again.status == 0, "\(again)")
        for (name, digest) in list.digests { #expect(try sha256(file: w.path("dest/" + name)) == digest, "\(name)") }
        // Each file asked twice: cut by the kill, then whole (nginx logs a cut answer once it notices).
        try await eventually(timeout: .seconds(10)) {
            list.nginx.accessLog().filter { $0.contains("GET /k/") }.count == 8
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: w.path("dest")).count == 4)
    }

    /// Beside another program's unwritten data (here 160 MiB just written and not synced, more than the
    /// 64 MiB a group's `syncfs` may wait for), each file is synced by the worker that fetched it: every
    /// file still arrives whole under its name, nothing is left behind.
    @Test func listBesideAnotherProgramsDirtyDataArrivesWhole() async throws {
        let w = try Workspace()
        try w.dir.subdirectory("www/b")
        var sums: [String] = []
        for i in 0..<40 {
            sums.append(try makeRandomFile(path: w.path("www/b/h\(i).bin"), size: 20_000, seed: UInt64(100 + i)))
        }
        let nginx = try await NginxServer(root: w.path("www"))
        try (0..<40).map { nginx.url(for: "b/h\($0).bin") }.joined(separator: "\n").write(
            toFile: w.path("l.txt"), atomically: true, encoding: .utf8)
        try w.dir.subdirectory("dest")
        let backlog = try await runProcess(
            "/bin/dd", ["if=/dev/zero", "of=" + w.path("backlog.bin"), "bs=1M", "count=160", "status=none"])
        #expect(backlog.status == 0, "\(backlog)")
        defer { unlink(w.path("backlog.bin")) }
        let r = try await w.run(["download", "-i", w.path("l.txt"), "-o", w.path("dest"), "--parallel", "8"])
        #expect(r.status == 0, "\(r)")
        for i in 0..<40 { #expect(try sha256(file: w.path("dest/h\(i).bin")) == sums[i]) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: w.path("dest")).count == 40, "no .part left")
    }

    /// Files of a list are published in groups after their data is synced: a kill -9 part-way leaves
    /// every file under its final name whole, and running the list again finishes the rest.
    @Test func listKilledPartWayLeavesOnlyWholeFilesAndFinishesOnTheNextRun() async throws {
        let w = try Workspace()
        try w.dir.subdirectory("www/k")
        try w.dir.subdirectory("dest")
        var digests: [String: String] = [:]
        for i in 0..<12 {
            digests["k\(i).bin"] = try makeRandomFile(
                path: w.path("www/k/k\(i).bin"), size: 100_000 + i, seed: UInt64(300 + i))
        }
        // nginx sends one second's worth at once, then 50 KB/s: about a second a file.
        let nginx = try await NginxServer(root: w.path("www"), limitRate: 50_000)
        try (0..<12).map { nginx.url(for: "k/k\($0).bin") }.joined(separator: "\n")
            .write(toFile: w.path("l.txt"), atomically: true, encoding: .utf8)
        let args = ["download", "-i", w.path("l.txt"), "-o", w.path("dest"), "--parallel", "3"]
        let finals = {
            try FileManager.default.contentsOfDirectory(atPath: w.path("dest")).filter { !$0.hasSuffix(".part") }
        }
        let p = try w.start(args)
        try await eventually(timeout: .seconds(30)) { try finals().count >= 3 }
        p.send(signal: SIGKILL)
        _ = try await p.wait()
        let published = try finals()
        #expect(published.count < 12)
        for name in published { #expect(try sha256(file: w.path("dest/" + name)) == digests[name], "\(name)") }
        let r = try await w.run(args)
        #expect(r.status == 0, "\(r)")
        for (name, digest) in digests { #expect(try sha256(file: w.path("dest/" + name)) == digest, "\(name)") }
        #expect(try FileManager.default.contentsOfDirectory(atPath: w.path("dest")).count == 12)
    }
}
