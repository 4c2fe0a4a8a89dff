import Foundation
import Testing

/// `resumectl upload DIR TARGET/` against `serve` and against moto (SigV4 checked), each through the
/// counting proxy: a tree of 60 files (empty ones, four folders deep, names with spaces, `#`, `%`, `+` and
/// non-ASCII letters, three large ones in several parts) arrives whole after a SIGKILL in mid-batch and
/// `resume b-…`, with under 1.15× the tree's bytes through the proxy; `--skip-existing` then sends no body.
@Suite struct FolderUploadTests {
    static let MiB = 1 << 20

    /// Names with spaces, `#`, `%`, `+` and non-ASCII letters (moto checks their signatures over the
    /// request line as sent, see scripts/moto_server.py).
    static let hardNames = ["a b", "#hash", "50%", "x+y", "Grüße", "日本 語"]

    /// Makes the tree under `root`: relative path → SHA-256.
    static func makeTree(_ root: String, names: [String] = hardNames, bigSize: Int, big: Int = 3) throws -> [String:
        String]
    {
        var files: [String: String] = [:]
        func add(_ relative: String, size: Int, seed: Int) throws {
            let path = root + "/" + relative
            try FileManager.default.createDirectory(
                atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            files[relative] = try makeRandomFile(path: path, size: size, seed: UInt64(seed))
        }
        for i in 0..<57 {
            let folders = (0..<(i % 5)).map { "\(names[($0 + i) % names.count]) \($0)" }
            let size = i % 8 == 0 ? 0 : 1_000 + (i * 7_919) % 60_000
            try add((folders + ["\(names[i % names.count]) \(i).bin"]).joined(separator: "/"), size: size, seed: i + 1)
        }
        for j in 0..<big { try add("big/\(names[j]) \(j).bin", size: bigSize, seed: 100 + j) }
        // Left out, with a line each: a link and a FIFO.
        try FileManager.default.createSymbolicLink(atPath: root + "/link", withDestinationPath: root + "/big")
        #expect(mkfifo(root + "/fifo", 0o600) == 0)
        return files
    }

    static func treeSize(_ root: String, _ files: [String: String]) -> Int {
        files.keys.reduce(0) {
            $0 + ((try? FileManager.default.attributesOfItem(atPath: root + "/" + $1)[.size] as? Int) ?? 0)
        }
    }

    /// Waits until the large files are under way, kills the batch (alive), and returns the announced batch id.
    static func killMidBatch(_ p: RunningProcess, once ready: () throws -> Bool = { true }) async throws -> String {
        let first = try await p.waitForLine(timeout: .seconds(60)) { $0.contains("\"started\"") }
        let announced = try #require(events(first).first?["token"] as? String)
        #expect(announced.hasPrefix("b-"))
        _ = try await p.waitForLine(timeout: .seconds(120)) { $0.contains("\"started\"") && $0.contains("/big/") }
        try await Task.sleep(for: .seconds(2))
        try await eventually(timeout: .seconds(30), ready)
        #expect(p.isRunning, "the batch was still running when killed")
        p.send(signal: SIGKILL)
        let killed = try await p.wait()
        #expect(killed.signaled, "\(killed)")
        return announced
    }

    @Test func folderToServeSurvivesAKillAndSkipsWhatIsThere() async throws {
        let w = try Workspace()
        let root = w.path("www/tree")
        let files = try Self.makeTree(root, bigSize: 6 * Self.MiB)
        let size = Self.treeSize(root, files)
        try w.dir.subdirectory("served")
        let (serve, port) = try await ServeDurabilityTests.startServe(folder: w.path("served"), port: 0)
        defer { serve.send(signal: SIGKILL) }
        let proxy = try FaultProxy(upstreamPort: port)
        let target = proxy.url(for: "dest/")
        // 1 MiB/s: each large file takes 6 s, so a kill that comes seconds late on a loaded machine still finds them
        // unfinished (at 2 MiB/s it once came after the batch ended); the kill waits for a file's token.
        let p = try w.start(["upload", root, target, "--json", "--limit-rate", "1M"])
        let id = try await Self.killMidBatch(p) { try !w.tokens().isEmpty }
        let listed = try await w.run(["list", "--json"])
        #expect(listed.stdout.contains(id), "\(listed)")
        let r = try await w.run(["resume", id, "--json"], timeout: .seconds(300))
        #expect(r.status == 0, "\(r)")
        let summary = try #require(events(r.stdout).first("batch"))
        #expect(summary["files"] as? Int == files.count && summary["failed"] as? Int == 0, "\(summary)")
        let arrived = try FileManager.default.subpathsOfDirectory(atPath: w.path("served/dest")).filter {
            var dir: ObjCBool = false
            return FileManager.default.fileExists(atPath: w.path("served/dest/") + $0, isDirectory: &dir)
                && !dir.boolValue
        }
        #expect(Set(arrived) == Set(files.keys), "none missing, none extra")
        for (relative, digest) in files {
            #expect(try sha256(file: w.path("served/dest/") + relative) == digest, "\(relative)")
        }
        #expect(proxy.bytesUpstream < size * 115 / 100, "\(proxy.bytesUpstream) bytes sent for a tree of \(size)")
        #expect(
            r.stderr.contains("skipped, a symbolic link") && r.stderr.contains("skipped, not a regular file"),
            "\(r.stderr)")

        let before = proxy.bytesUpstream
        let again = try await w.run(["upload", root, target, "--skip-existing", "--json"])
        #expect(again.status == 0, "\(again)")
        let skipped = events(again.stdout).filter { $0["event"] as? String == "skipped" }
        #expect(skipped.count == files.count, "\(again.stdout)")
        #expect(proxy.bytesUpstream - before < files.count * 1_000, "HEADs only: \(proxy.bytesUpstream - before) bytes")
        #expect(try w.tokens().isEmpty)
        let wait = try await w.run(["wait", id])
        #expect(wait.status == 0, "\(wait)")
    }

    @Test func folderToS3SurvivesAKillAndSkipsWhatIsThere() async throws {
        let s = try await S3Scene()
        let root = s.w.path("www/tree")
        // 36 MiB in 5 MiB parts, one part of a file at a time (--parallel 8): a kill costs at most a part
        // in flight per large file, under 15 % of the tree.
        let files = try Self.makeTree(root, bigSize: 36 * Self.MiB)
        let size = Self.treeSize(root, files)
        let proxy = try FaultProxy(upstreamPort: s.moto.port)
        let args = [
            "upload", root, s.url("pre/"), "--endpoint-url", proxy.baseURL, "--json", "--parallel", "8", "--part-size",
            "5M",
        ]
        let p = try s.start(args + ["--limit-rate", "3M"])
        let id = try await Self.killMidBatch(p)
        let r = try await s.run(args, timeout: .seconds(300))
        #expect(r.status == 0, "\(r)")
        #expect(events(r.stdout).first("started")?["token"] as? String == id, "the same command continues the batch")
        let stored = try await s.moto.digests(s.bucket)
        #expect(Set(stored.keys) == Set(files.keys.map { "pre/" + $0 }), "none missing, none extra")
        for (relative, digest) in files { #expect(stored["pre/" + relative] == digest, "\(relative)") }
        #expect(proxy.bytesUpstream < size * 115 / 100, "\(proxy.bytesUpstream) bytes sent for a tree of \(size)")
        #expect(try await s.moto.uploads(s.bucket).isEmpty, "no multipart upload left behind")

        let before = proxy.bytesUpstream
        let again = try await s.run(args + ["--skip-existing"])
        #expect(again.status == 0, "\(again)")
        #expect(
            events(again.stdout).filter { $0["event"] as? String == "skipped" }.count == files.count, "\(again.stdout)")
        #expect(proxy.bytesUpstream - before < files.count * 2_000, "HEADs only: \(proxy.bytesUpstream - before) bytes")
    }

    @Test func hardNamesBecomeTheSameKeysOnS3() async throws {
        let s = try await S3Scene()
        let root = s.w.path("www/tree")
        let files = try Self.makeTree(root, bigSize: 0, big: 0)
        let r = try await s.run(["upload", root, s.url("p/"), "--endpoint-url", s.moto.endpoint, "--parallel", "6"])
        #expect(r.status == 0, "\(r)")
        #expect(r.stdout.split(separator: "\n").count == files.count, "one line per file that arrived")
        let stored = try await s.moto.digests(s.bucket)
        #expect(stored == Dictionary(uniqueKeysWithValues: files.map { ("p/" + $0.key, $0.value) }))
    }

    @Test func badInputIsOneLineAndADocumentedStatus() async throws {
        let w = try Workspace()
        try w.dir.subdirectory("www/d")
        let notFolder = try await w.run(["upload", w.path("www/d"), "http://127.0.0.1:9/no-slash"])
        #expect(notFolder.status == 64 && notFolder.stderr.split(separator: "\n").count == 1, "\(notFolder)")
        let flag = try await w.run(["upload", "--skip-existing", w.path("www/nothing"), "http://127.0.0.1:9/x/"])
        #expect(flag.status == 64, "\(flag)")
        let unknown = try await w.run(["resume", "b-0000000000000000"])
        #expect(unknown.status == 66, "\(unknown)")
    }
}

/// The batch id from the other commands: `pause` stops it (75), `list`, `show` and `wait` know it, a file
/// changed meanwhile is sent again from its first byte (`restarted`), `cancel` forgets it.
@Suite struct FolderUploadControlTests {
    @Test func pauseListShowWaitResumeAfterAChangeAndCancel() async throws {
        let w = try Workspace()
        let root = w.path("www/tree")
        var files: [String: String] = [:]
        try FileManager.default.createDirectory(atPath: root + "/sub", withIntermediateDirectories: true)
        for i in 0..<2 {
            files["big \(i).bin"] = try makeRandomFile(path: root + "/big \(i).bin", size: 6 << 20, seed: UInt64(i + 1))
        }
        for i in 0..<6 {
            files["sub/s\(i)"] = try makeRandomFile(path: root + "/sub/s\(i)", size: 10_000 + i, seed: UInt64(i + 10))
        }
        try w.dir.subdirectory("served")
        let (serve, port) = try await ServeDurabilityTests.startServe(folder: w.path("served"), port: 0)
        defer { serve.send(signal: SIGKILL) }
        let target = "http://127.0.0.1:\(port)/up/"
        let p = try w.start(["upload", root, target, "--json", "--limit-rate", "1M", "--parallel", "2"])
        let first = try await p.waitForLine { $0.contains("\"started\"") }
        let id = try #require(events(first).first?["token"] as? String)
        _ = try await p.waitForLine { $0.contains("\"started\"") && $0.contains("big 1") }
        try await Task.sleep(for: .seconds(1))
        #expect(p.isRunning, "the batch was running when paused")
        let paused = try await w.run(["pause", id])
        #expect(paused.status == 0 && paused.stderr.contains("paused \(id)"), "\(paused)")
        let stopped = try await p.wait()
        #expect(stopped.status == 75, "\(stopped)")
        #expect(events(stopped.stdout).first("batch")?["exit"] as? Int == 75)

        let listed = try await w.run(["list"])
        #expect(listed.stdout.contains("\(id)  batch  paused"), "\(listed)")
        // The large files' tokens belong to the batch: not listed, not resumed alone.
        let fileTokens = try w.tokens()
        let fileToken = try #require(fileTokens.first, "\(listed)")
        #expect(fileTokens.allSatisfy { !listed.stdout.contains($0) }, "\(fileTokens) \(listed)")
        let alone = try await w.run(["resume", fileToken])
        #expect(alone.status == 64 && alone.stderr.contains("resume \(id)"), "\(alone)")
        let shown = try await w.run(["show", id])
        #expect(shown.status == 0 && shown.stdout.contains("\"target\" : \"\(target)\""), "\(shown)")
        #expect(try await w.run(["wait", id]).status == 75)

        // The first large file changes before the batch goes on: it is sent again from its first byte.
        files["big 0.bin"] = try makeRandomFile(path: root + "/big 0.bin", size: (6 << 20) + 1, seed: 99)
        let resumed = try await w.run(["resume", id, "--json"], timeout: .seconds(120))
        #expect(resumed.status == 0, "\(resumed)")
        #expect(
            events(resumed.stdout).contains {
                $0["event"] as? String == "restarted" && ($0["path"] as? String)?.hasSuffix("big 0.bin") == true
            },
            "\(resumed.stdout)")
        for (relative, digest) in files {
            #expect(try sha256(file: w.path("served/up/") + relative) == digest, "\(relative)")
        }
        // The changed file's first upload was dropped (DELETE), not left unfinished on the server.
        let unfinished = try FileManager.default.contentsOfDirectory(atPath: w.path("served/.resumectl-uploads")).filter
        { $0.hasSuffix(".json") }
        #expect(unfinished.isEmpty, "\(unfinished)")
        #expect(try await w.run(["wait", id]).status == 0)
        #expect(try w.tokens().isEmpty)

        // cancel: a paused batch to another folder is forgotten, with its files' unfinished uploads.
        let q = try w.start(["upload", root, "http://127.0.0.1:\(port)/other/", "--json", "--limit-rate", "1M"])
        let other = try #require(
            events(try await q.waitForLine { $0.contains("\"started\"") }).first?["token"] as? String)
        _ = try await q.waitForLine { $0.contains("\"started\"") && $0.contains("big") }
        try await Task.sleep(for: .milliseconds(500))
        let cancelled = try await w.run(["cancel", other])
        #expect(cancelled.status == 0 && cancelled.stderr.contains("cancelled \(other)"), "\(cancelled)")
        _ = try await q.wait()
        #expect(try w.tokens().isEmpty, "the files' tokens went with the batch")
        #expect(!w.exists(w.state + "/batches/\(other).json"))
        let after = try await w.run(["resume", other])
        #expect(after.status == 66, "\(after)")
    }

    @Test func detachedBatchAnnouncesItsIdAndWaitReturnsItsStatus() async throws {
        let w = try Workspace()
        let root = w.path("www/tree")
        try FileManager.default.createDirectory(atPath: root + "/a", withIntermediateDirectories: true)
        var files: [String: String] = [:]
        for i in 0..<5 {
            files["a/f\(i)"] = try makeRandomFile(path: root + "/a/f\(i)", size: 50_000 * i, seed: UInt64(i + 1))
        }
        try w.dir.subdirectory("served")
        let (serve, port) = try await ServeDurabilityTests.startServe(folder: w.path("served"), port: 0)
        defer { serve.send(signal: SIGKILL) }
        let r = try await w.run(["upload", root, "http://127.0.0.1:\(port)/d/", "--detach"])
        #expect(r.status == 0, "\(r)")
        let id = r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(id.hasPrefix("b-"), "\(r)")
        let waited = try await w.run(["wait", id, "--timeout", "60"])
        #expect(waited.status == 0, "\(waited)")
        for (relative, digest) in files {
            #expect(try sha256(file: w.path("served/d/") + relative) == digest, "\(relative)")
        }
        let log = try await w.run(["log", id])
        #expect(log.stdout.contains("\"event\":\"batch\"") && log.stdout.contains(id), "\(log)")
    }

    /// One OPTIONS for the whole batch (none when the draft is pinned), then one request per small file:
    /// the draft's complete POST, or tus's creation with the upload.
    @Test(arguments: ["auto", "tus", "ietf"]) func theProtocolIsFoundOnceAndASmallFileCostsOneRequest(choice: String)
        async throws
    {
        let w = try Workspace()
        let root = w.path("www/tree")
        try FileManager.default.createDirectory(atPath: root + "/x y/z", withIntermediateDirectories: true)
        var files: [String: String] = [:]
        for i in 0..<10 {
            let relative = (i % 2 == 0 ? "x y/z/" : "") + "f \(i).bin"
            files[relative] = try makeRandomFile(
                path: root + "/" + relative, size: i == 0 ? 0 : 3_000 * i, seed: UInt64(i + 1))
        }
        try w.dir.subdirectory("served")
        let (serve, port) = try await ServeDurabilityTests.startServe(folder: w.path("served"), port: 0)
        defer { serve.send(signal: SIGKILL) }
        let r = try await w.run(["upload", root, "http://127.0.0.1:\(port)/p/", "--protocol", choice])
        #expect(r.status == 0, "\(r)")
        for (relative, digest) in files {
            #expect(try sha256(file: w.path("served/p/") + relative) == digest, "\(relative)")
        }
        let log = serve.stderrSoFar.split(separator: "\n").filter { $0.contains(" in=") }
        #expect(log.filter { $0.hasPrefix("OPTIONS ") }.count == (choice == "ietf" ? 0 : 1), "\(log)")
        #expect(log.filter { !$0.hasPrefix("OPTIONS ") }.count == files.count, "\(log)")
    }
}
