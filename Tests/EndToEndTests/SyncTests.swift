import Foundation
import Testing

/// `resumectl sync SRC DST` against `serve` (both ways), nginx's autoindex (down) and moto (both ways): the
/// dry run's plan is the run's, the trees end equal by SHA-256 with no extra file, a kill mid-run costs no
/// file sent twice, and a bad listing or `--max-delete` deletes nothing.
@Suite struct SyncTests {
    /// Every regular file below `root` → its SHA-256.
    static func digests(_ root: String) throws -> [String: String] {
        var out: [String: String] = [:]
        for relative in FileManager.default.subpaths(atPath: root) ?? [] {
            var st = stat()
            guard lstat(root + "/" + relative, &st) == 0, st.st_mode & S_IFMT == S_IFREG else { continue }
            out[relative] = try sha256(file: root + "/" + relative)
        }
        return out
    }

    /// Small files with hard names two folders deep.
    static func makeTree(_ root: String, count: Int = 12) throws -> [String: String] {
        var files: [String: String] = [:]
        for i in 0..<count {
            let name = FolderUploadTests.hardNames[i % 6]
            let relative = (i % 3 == 0 ? "" : "\(name) d/") + (i % 4 == 0 ? "deep/" : "") + "\(name) \(i).bin"
            try FileManager.default.createDirectory(
                atPath: ((root + "/" + relative) as NSString).deletingLastPathComponent,
                withIntermediateDirectories: true)
            files[relative] = try makeRandomFile(path: root + "/" + relative, size: 500 + i * 997, seed: UInt64(i + 1))
            // Made two hours ago: a copy (an upload's arrival) is later than its source, as it is after a while.
            try FileManager.default.setAttributes(
                [.modificationDate: Date().addingTimeInterval(-7_200)], ofItemAtPath: root + "/" + relative)
        }
        return files
    }

    /// Gives `path` new bytes of the same size (and the time of now).
    static func rewrite(_ path: String, seed: UInt64) throws -> String {
        let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int ?? 0
        return try makeRandomFile(path: path, size: size, seed: seed)
    }

    /// The plan events of a run, as `action path` lines in their order.
    static func plan(_ stdout: String) -> [String] {
        events(stdout).filter { $0["event"] as? String == "plan" }.map {
            "\($0["action"] as? String ?? "?") \($0["path"] as? String ?? "?")"
        }
    }

    static func changed(_ stdout: String, _ event: String) -> Set<String> {
        Set(events(stdout).filter { $0["event"] as? String == event }.compactMap { $0["url"] as? String })
    }

    /// Changes the source: three files rewritten (same size), two added, two removed; returns the plan it
    /// makes, as ``plan(_:)`` gives it, sorted.
    static func change(_ root: String, _ files: inout [String: String]) throws -> [String] {
        // A second after the copies arrived: the times S3 and serve keep are whole seconds.
        Thread.sleep(forTimeInterval: 1.1)
        let names = files.keys.sorted()
        var expected: [String] = []
        for (k, name) in names.prefix(3).enumerated() {
            files[name] = try rewrite(root + "/" + name, seed: UInt64(500 + k))
            expected.append("replace \(name)")
        }
        for name in names.suffix(2) {
            try FileManager.default.removeItem(atPath: root + "/" + name)
            files[name] = nil
            expected.append("delete \(name)")
        }
        for name in ["new one.bin", "Grüße d/new #2.bin"] {
            files[name] = try makeRandomFile(path: root + "/" + name, size: 3_000, seed: 77)
            expected.append("copy \(name)")
        }
        return expected.sorted()
    }

    @Test func upToServeDryRunIsTheRunAndTheTreesEndEqual() async throws {
        let w = try Workspace()
        let src = w.path("src")
        var files = try Self.makeTree(src)
        try w.dir.subdirectory("served")
        let (serve, port) = try await ServeProcess.start(folder: w.path("served"), ["--overwrite"])
        defer { serve.send(signal: SIGKILL) }
        let url = "http://127.0.0.1:\(port)/dest/"
        let dest = w.path("served/dest")

        let first = try await w.run(["sync", src, url, "--delete", "--json"])
        #expect(first.status == 0, "\(first)")
        #expect(Set(Self.plan(first.stdout)) == Set(files.keys.map { "copy \($0)" }), "\(first.stdout)")
        #expect(try Self.digests(dest) == files)

        var expected = try Self.change(src, &files)
        _ = try makeRandomFile(path: dest + "/only there.bin", size: 10, seed: 9)
        expected = (expected + ["delete only there.bin"]).sorted()
        let before = try Self.digests(dest)
        let dry = try await w.run(["sync", src, url, "--delete", "--dry-run", "--json"])
        #expect(dry.status == 0, "\(dry)")
        let planned = Self.plan(dry.stdout)
        #expect(planned.filter { !$0.hasPrefix("keep ") }.sorted() == expected, "\(dry.stdout)")
        #expect(try Self.digests(dest) == before, "a dry run changes nothing")
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: w.state + "/batches")) ?? []).isEmpty)
        #expect(try w.tokens().isEmpty)
        let human = try await w.run(["sync", src, url, "--delete", "--dry-run"])
        #expect(human.stdout.contains("replace ") && human.stdout.contains("(not at the source)"), "\(human)")
        #expect(human.stdoutLines.last?.contains("3 replace, 3 delete") == true, "\(human.stdout)")

        let run = try await w.run(["sync", src, url, "--delete", "--json"])
        #expect(run.status == 0, "\(run)")
        #expect(Self.plan(run.stdout) == planned, "the run carries out the dry run's plan")
        let sent = expected.filter { !$0.hasPrefix("delete ") }.map {
            url + Self.encoded(String($0.split(separator: " ", maxSplits: 1)[1]))
        }
        #expect(Self.changed(run.stdout, "completed") == Set(sent), "\(run.stdout)")
        #expect(Self.changed(run.stdout, "deleted").count == 3, "\(run.stdout)")
        #expect(try Self.digests(dest) == files, "none missing, none extra, every byte equal")

        let again = try await w.run(["sync", src, url, "--delete", "--json"])
        #expect(again.status == 0 && Self.plan(again.stdout).allSatisfy { $0.hasPrefix("keep ") }, "\(again.stdout)")
        #expect(Self.changed(again.stdout, "completed").isEmpty)
    }

    /// Gives `path` new bytes of the same size and puts its time back: only a content hash tells them apart.
    static func sneak(_ path: String, seed: UInt64) throws -> String {
        let time = try FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date ?? Date()
        let digest = try rewrite(path, seed: seed)
        try FileManager.default.setAttributes([.modificationDate: time], ofItemAtPath: path)
        return digest
    }

    /// The plan's actions other than `keep`.
    static func changes(_ stdout: String) -> [String] { plan(stdout).filter { !$0.hasPrefix("keep ") } }

    @Test func checksumFindsWhatSizeAndTimeMissToAndFromServe() async throws {
        let w = try Workspace()
        let src = w.path("src")
        var files = try Self.makeTree(src, count: 6)
        try w.dir.subdirectory("served")
        let (serve, port) = try await ServeProcess.start(folder: w.path("served"), ["--overwrite"])
        defer { serve.send(signal: SIGKILL) }
        let url = "http://127.0.0.1:\(port)/dest/"
        #expect(try await w.run(["sync", src, url]).status == 0)
        let name = try #require(files.keys.sorted().first)
        files[name] = try Self.sneak(src + "/" + name, seed: 901)
        let blind = try await w.run(["sync", src, url, "--dry-run", "--json"])
        #expect(blind.status == 0 && Self.changes(blind.stdout).isEmpty, "size and time miss it: \(blind.stdout)")
        let up = try await w.run(["sync", src, url, "--checksum", "--json"])
        #expect(up.status == 0 && Self.changes(up.stdout) == ["replace \(name)"], "\(up)")
        #expect(try Self.digests(w.path("served/dest")) == files)

        // Down: serve's copy changes under the same size and time; its Repr-Digest tells.
        let local = w.path("local")
        #expect(try await w.run(["sync", url, local]).status == 0)
        let other = try #require(files.keys.sorted().last)
        files[other] = try Self.sneak(w.path("served/dest/") + other, seed: 902)
        let blindDown = try await w.run(["sync", url, local, "--dry-run", "--json"])
        #expect(blindDown.status == 0 && Self.changes(blindDown.stdout).isEmpty, "\(blindDown.stdout)")
        let down = try await w.run(["sync", url, local, "--checksum", "--json"])
        #expect(down.status == 0 && Self.changes(down.stdout) == ["replace \(other)"], "\(down)")
        #expect(try Self.digests(local) == files)
    }

    @Test func checksumFindsWhatSizeAndTimeMissUpToS3() async throws {
        let s = try await S3Scene()
        let src = s.w.path("src")
        var files = try Self.makeTree(src, count: 6)
        let args = ["sync", src, s.url("m/"), "--endpoint-url", s.moto.endpoint]
        #expect(try await s.run(args).status == 0)
        let name = try #require(files.keys.sorted().first)
        files[name] = try Self.sneak(src + "/" + name, seed: 903)
        let blind = try await s.run(args + ["--dry-run", "--json"])
        #expect(blind.status == 0 && Self.changes(blind.stdout).isEmpty, "size and time miss it: \(blind.stdout)")
        let sums = try await s.run(args + ["--checksum", "--json"])
        #expect(sums.status == 0 && Self.changes(sums.stdout) == ["replace \(name)"], "\(sums)")
        #expect(
            try await s.moto.digests(s.bucket)
                == Dictionary(uniqueKeysWithValues: files.map { ("m/" + $0.key, $0.value) }))
    }

    static func encoded(_ relative: String) -> String {
        relative.split(separator: "/").map {
            $0.addingPercentEncoding(
                withAllowedCharacters: CharacterSet(
                    charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")) ?? ""
        }.joined(separator: "/")
    }

    @Test func downFromServeAndNginxDeletesExtrasAndEmptyFolders() async throws {
        let w = try Workspace()
        var files = try Self.makeTree(w.path("www/tree"))
        let nginx = try await NginxServer(root: w.path("www"), serverDirectives: "autoindex on;")
        let local = w.path("local")
        try FileManager.default.createDirectory(atPath: local + "/old/deeper", withIntermediateDirectories: true)
        _ = try makeRandomFile(path: local + "/old/deeper/x.bin", size: 10, seed: 3)
        try FileManager.default.createDirectory(atPath: local + "/empty/er", withIntermediateDirectories: true)
        let first = try await w.run(["sync", nginx.url(for: "tree/"), local, "--delete"])
        #expect(first.status == 0, "\(first)")
        #expect(try Self.digests(local) == files, "the extra went")
        #expect(!FileManager.default.fileExists(atPath: local + "/old"), "with the folders it leaves empty")
        #expect(!FileManager.default.fileExists(atPath: local + "/empty"), "and folders empty before")
        // nginx offers no hash: --checksum says so once and compares size and time.
        let noHash = try await w.run(["sync", nginx.url(for: "tree/"), local, "--checksum", "--dry-run", "--json"])
        #expect(noHash.status == 0 && Self.changes(noHash.stdout).isEmpty, "\(noHash)")
        #expect(noHash.stderr.components(separatedBy: "warning: --checksum").count == 2, "\(noHash.stderr)")

        let expected = try Self.change(w.path("www/tree"), &files)
        let dry = try await w.run(["sync", nginx.url(for: "tree/"), local, "--delete", "--dry-run", "--json"])
        #expect(Self.plan(dry.stdout).filter { !$0.hasPrefix("keep ") }.sorted() == expected, "\(dry.stdout)")
        let run = try await w.run(["sync", nginx.url(for: "tree/"), local, "--delete", "--json"])
        #expect(run.status == 0 && Self.plan(run.stdout) == Self.plan(dry.stdout), "\(run)")
        #expect(try Self.digests(local) == files)

        // From serve's JSON listing into a second folder, then nothing to do.
        let (serve, port) = try await ServeProcess.start(folder: w.path("www"))
        defer { serve.send(signal: SIGKILL) }
        let url = "http://127.0.0.1:\(port)/tree/"
        let down = try await w.run(["sync", url, w.path("second"), "--json"])
        #expect(down.status == 0, "\(down)")
        #expect(try Self.digests(w.path("second")) == files)
        let again = try await w.run(["sync", url, w.path("second"), "--json"])
        #expect(Self.plan(again.stdout).allSatisfy { $0.hasPrefix("keep ") } && again.status == 0, "\(again.stdout)")
    }

    @Test func aBadListingOrMaxDeleteDeletesNothing() async throws {
        let w = try Workspace()
        let files = try Self.makeTree(w.path("www/tree"))
        try FileManager.default.createDirectory(atPath: w.path("www/empty"), withIntermediateDirectories: true)
        let nginx = try await NginxServer(
            root: w.path("www"),
            serverDirectives: "autoindex on; autoindex_format json; location /tree/deep/ { return 500; }")
        let local = w.path("local")
        let seeded = try Self.makeTree(local, count: 20)

        let empty = try await w.run(["sync", nginx.url(for: "empty/"), local, "--delete"])
        #expect(empty.status == 65 && empty.stderr.contains("empty"), "\(empty)")
        #expect(empty.stderr.contains("nothing done"), "\(empty.stderr)")
        #expect(try Self.digests(local) == seeded)

        let five = try await w.run(["sync", nginx.url(for: "tree/"), local, "--delete", "--retries", "0"])
        #expect(five.status == 75, "retries spent on a listing: \(five)")
        #expect(try Self.digests(local) == seeded, "a sub-folder that failed to list deletes nothing")

        // The source's listing cut halfway through its entries (the connection dropped): no plan, nothing
        // deleted, and the same command may try again (75).
        let whole = try await CurlExchange.run([nginx.url(for: "tree/")])
        #expect(whole.status == 200 && whole.body.count > 600, "\(whole.body.count) bytes")
        let cut = try FaultProxy(
            upstreamPort: nginx.port, plan: [.cutAfterDownstream(bytes: 200 + whole.body.count / 2)])
        let torn = try await w.run(["sync", cut.url(for: "tree/"), local, "--delete", "--retries", "0"])
        #expect(torn.status == 75, "\(torn)")
        #expect(cut.connections.first?.triggered == true, "the proxy cut it")
        #expect(cut.connections.flatMap(\.requestLines).map { $0.hasPrefix("GET /tree/ ") } == [true])
        #expect(try Self.digests(local) == seeded)

        let limited = try await w.run([
            "sync", w.path("www/tree"), "http://127.0.0.1:9/x/", "--delete", "--max-delete", "-1",
        ])
        #expect(limited.status == 64, "\(limited)")
        let (serve, port) = try await ServeProcess.start(folder: local, ["--overwrite"])
        defer { serve.send(signal: SIGKILL) }
        let many = try await w.run([
            "sync", w.path("www/tree"), "http://127.0.0.1:\(port)/", "--delete", "--max-delete", "3",
        ])
        #expect(many.status == 1 && many.stderr.contains("--max-delete 3"), "\(many)")
        #expect(try Self.digests(local) == seeded, "refused before any copy or delete")
        _ = files
    }

    /// A listing cut short inside a length that hides the cut (the `Content-Length` is the cut's): JSON that
    /// stops between two entries does not parse, an HTML page lacks its `</html>`. With `--delete` the run is
    /// refused (65) before anything but the listing is asked for; the whole page plans the deletes.
    @Test(arguments: ["json", "html"]) func aListingCutWithinItsLengthDeletesNothing(_ kind: String) async throws {
        let w = try Workspace()
        let local = w.path("local")
        let seeded = try Self.makeTree(local, count: 4)
        let names = ["one.bin", "two.bin", "three.bin"]
        let page =
            kind == "json"
            ? "[\n"
                + names.map {
                    "{ \"name\":\"\($0)\", \"type\":\"file\", \"mtime\":\"Thu, 03 Dec 2026 07:00:00 GMT\", "
                        + "\"size\":1000 }"
                }.joined(separator: ",\n") + "\n]\n"
            : "<html>\n<head><title>Index of /x/</title></head>\n<body>\n<h1>Index of /x/</h1><hr><pre>"
                + "<a href=\"../\">../</a>\n"
                + names.map { "<a href=\"\($0)\">\($0)</a>          03-Dec-2026 07:00     1000\n" }.joined()
                + "</pre><hr></body>\n</html>\n"
        let end = try #require(page.range(of: kind == "json" ? "{ \"name\":\"three" : "<a href=\"three"))
        let cut = String(page[..<end.lowerBound])
        let server = try RawResponseServer { request in
            let body = Array((request.target == "/whole/" ? page : cut).utf8)
            let type = kind == "json" ? "application/json" : "text/html"
            return Array(
                "HTTP/1.1 200 OK\r\nContent-Type: \(type)\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n"
                    .utf8) + body
        }
        let whole = try await w.run(["sync", server.url(for: "whole/"), local, "--delete", "--dry-run", "--json"])
        #expect(whole.status == 0 && Self.changes(whole.stdout).count == 3 + seeded.count, "\(whole)")
        for more in [["--dry-run"], []] {
            let r = try await w.run(["sync", server.url(for: "tree/"), local, "--delete"] + more)
            #expect(r.status == 65, "\(r)")
        }
        #expect(try Self.digests(local) == seeded, "nothing deleted")
        #expect(server.requests.map(\.target) == ["/whole/", "/tree/", "/tree/"], "only listings were asked for")
    }

    @Test func aKillMidSyncCostsNoFileTwice() async throws {
        let w = try Workspace()
        let root = w.path("src")
        let files = try FolderUploadTests.makeTree(root, bigSize: 8 * FolderUploadTests.MiB, big: 2)
        let size = FolderUploadTests.treeSize(root, files)
        try w.dir.subdirectory("served")
        let (serve, port) = try await ServeProcess.start(folder: w.path("served"), ["--overwrite"])
        defer { serve.send(signal: SIGKILL) }
        let proxy = try FaultProxy(upstreamPort: port)
        let args = ["sync", root, proxy.url(for: "dest/"), "--delete", "--json"]
        let p = try w.start(args + ["--limit-rate", "1M"])
        let id = try await FolderUploadTests.killMidBatch(p)
        let r = try await w.run(args, timeout: .seconds(300))
        #expect(r.status == 0, "\(r)")
        #expect(events(r.stdout).first("started")?["token"] as? String == id, "the same command continues the batch")
        #expect(try Self.digests(w.path("served/dest")) == files)
        #expect(proxy.bytesUpstream < size * 115 / 100, "\(proxy.bytesUpstream) bytes sent for a tree of \(size)")
    }

    @Test func aKillMidSyncDownContinuesEachFileFromItsCommittedBytes() async throws {
        let w = try Workspace()
        var files = try Self.makeTree(w.path("www/tree"))
        try w.dir.subdirectory("www/tree/big")
        try w.dir.subdirectory("local")
        for j in 0..<2 {
            files["big/\(j) b.bin"] = try makeRandomFile(
                path: w.path("www/tree/big/\(j) b.bin"), size: 8 * FolderUploadTests.MiB, seed: UInt64(50 + j))
        }
        let size = FolderUploadTests.treeSize(w.path("www/tree"), files)
        // Slowed at the server: bytes a slow reader leaves in its socket would be counted and lost with the kill.
        let nginx = try await NginxServer(root: w.path("www"), limitRate: 1_000_000, serverDirectives: "autoindex on;")
        let proxy = try FaultProxy(upstreamPort: nginx.port)
        let local = w.path("local")
        _ = try makeRandomFile(path: local + "/extra.bin", size: 10, seed: 1)
        let args = ["sync", proxy.url(for: "tree/"), local, "--delete", "--json"]
        let p = try w.start(args + ["--checkpoint-interval", "0.2"])
        let id = try await FolderUploadTests.killMidBatch(p)
        #expect(FileManager.default.fileExists(atPath: local + "/extra.bin"), "a killed run deleted nothing")
        let r = try await w.run(args, timeout: .seconds(300))
        #expect(r.status == 0, "\(r)")
        #expect(events(r.stdout).first("started")?["token"] as? String == id, "the same command continues the batch")
        #expect(try Self.digests(local) == files, "every byte equal, the extra gone")
        #expect(proxy.bytesDownstream < size * 115 / 100, "\(proxy.bytesDownstream) bytes for a tree of \(size)")
        #expect(try w.tokens().isEmpty)
    }

    @Test func aCopyThatFailsLeavesEveryExtra() async throws {
        let w = try Workspace()
        let src = w.path("src")
        var files = try Self.makeTree(src, count: 6)
        try w.dir.subdirectory("served")
        // Without --overwrite serve keeps the files it has: a replace fails with 409.
        let (serve, port) = try await ServeProcess.start(folder: w.path("served"))
        defer { serve.send(signal: SIGKILL) }
        let url = "http://127.0.0.1:\(port)/d/"
        #expect(try await w.run(["sync", src, url]).status == 0)
        _ = try makeRandomFile(path: w.path("served/d/extra.bin"), size: 10, seed: 3)
        let expected = try Self.change(src, &files)
        let r = try await w.run(["sync", src, url, "--delete"])
        #expect(r.status == 1 && r.stderr.contains("serve replaces with --overwrite"), "\(r)")
        #expect(w.exists(w.path("served/d/extra.bin")), "no delete after a failed copy")
        #expect(expected.contains { $0.hasPrefix("delete ") })
        for name in expected where name.hasPrefix("delete ") {
            #expect(w.exists(w.path("served/d/") + name.dropFirst(7)), "\(name) stays")
        }
    }

    @Test func pauseListShowWaitAndResumeTakeTheSyncBatch() async throws {
        let w = try Workspace()
        let src = w.path("src")
        var files = try Self.makeTree(src)
        files["big.bin"] = try makeRandomFile(path: src + "/big.bin", size: 6 << 20, seed: 40)
        try w.dir.subdirectory("served/dest")
        _ = try makeRandomFile(path: w.path("served/dest/extra.bin"), size: 10, seed: 2)
        let (serve, port) = try await ServeProcess.start(folder: w.path("served"), ["--overwrite"])
        defer { serve.send(signal: SIGKILL) }
        let url = "http://127.0.0.1:\(port)/dest/"
        let p = try w.start(["sync", src, url, "--delete", "--json", "--limit-rate", "1M"])
        let id = try #require(events(try await p.waitForLine { $0.contains("\"started\"") }).first?["token"] as? String)
        _ = try await p.waitForLine { $0.contains("\"started\"") && $0.contains("big.bin") }
        try await Task.sleep(for: .seconds(1))
        #expect(try await w.run(["pause", id]).status == 0)
        #expect(try await p.wait().status == 75)
        #expect(w.exists(w.path("served/dest/extra.bin")), "a paused sync deleted nothing")
        let listed = try await w.run(["list"])
        #expect(listed.stdout.contains("\(id)  batch  paused"), "\(listed)")
        let shown = try await w.run(["show", id])
        #expect(shown.status == 0 && shown.stdout.contains("\"delete\" : true"), "the record keeps the sync: \(shown)")
        #expect(try await w.run(["wait", id]).status == 75)
        let resumed = try await w.run(["resume", id, "--json"], timeout: .seconds(120))
        #expect(resumed.status == 0, "\(resumed)")
        #expect(try Self.digests(w.path("served/dest")) == files, "resume ran the sync, its delete too")
        #expect(try await w.run(["wait", id]).status == 0)
    }

    @Test func s3DeletesGoAThousandKeysARequest() async throws {
        let s = try await S3Scene()
        let extras = try await s.moto.putMany(s.bucket, prefix: "m/", count: 1_001, size: 1)
        #expect(extras.count == 1_001)
        let src = s.w.path("src")
        let files = try Self.makeTree(src, count: 2)
        let endpoint = ["--endpoint-url", s.moto.endpoint]
        let refused = try await s.run(["sync", src, s.url("m/"), "--delete", "--max-delete", "1000"] + endpoint)
        #expect(refused.status == 1, "\(refused)")
        #expect(try await s.moto.digests(s.bucket).count == 1_001, "refused before any copy")
        let r = try await s.run(["sync", src, s.url("m/"), "--delete", "--json"] + endpoint)
        #expect(r.status == 0 && Self.changed(r.stdout, "deleted").count == 1_001, "\(r.stderr)")
        #expect(
            try await s.moto.digests(s.bucket)
                == Dictionary(uniqueKeysWithValues: files.map { ("m/" + $0.key, $0.value) }))
    }

    @Test func toAndFromS3WithDeleteAndChecksum() async throws {
        let s = try await S3Scene()
        let src = s.w.path("src")
        var files = try Self.makeTree(src)
        let target = s.url("mirror/")
        let endpoint = ["--endpoint-url", s.moto.endpoint]
        let up = try await s.run(["sync", src, target, "--delete", "--json"] + endpoint)
        #expect(up.status == 0, "\(up)")
        #expect(
            try await s.moto.digests(s.bucket)
                == Dictionary(uniqueKeysWithValues: files.map { ("mirror/" + $0.key, $0.value) }))

        let expected = try Self.change(src, &files)
        let dry = try await s.run(["sync", src, target, "--delete", "--dry-run", "--json"] + endpoint)
        #expect(Self.plan(dry.stdout).filter { !$0.hasPrefix("keep ") }.sorted() == expected, "\(dry.stdout)")
        let run = try await s.run(["sync", src, target, "--delete", "--json"] + endpoint)
        #expect(run.status == 0 && Self.plan(run.stdout) == Self.plan(dry.stdout), "\(run)")
        #expect(
            try await s.moto.digests(s.bucket)
                == Dictionary(uniqueKeysWithValues: files.map { ("mirror/" + $0.key, $0.value) }))

        // Down into a folder, then a change neither size nor time shows: only --checksum finds it.
        let local = s.w.path("local")
        let down = try await s.run(["sync", target, local, "--delete"] + endpoint)
        #expect(try Self.digests(local) == files && down.status == 0, "\(down)")
        let name = try #require(files.keys.sorted().first)
        let attributes = try FileManager.default.attributesOfItem(atPath: local + "/" + name)
        _ = try makeRandomFile(path: local + "/" + name, size: attributes[.size] as? Int ?? 0, seed: 999)
        try FileManager.default.setAttributes(
            [.modificationDate: attributes[.modificationDate]!], ofItemAtPath: local + "/" + name)
        let blind = try await s.run(["sync", target, local, "--dry-run", "--json"] + endpoint)
        #expect(Self.plan(blind.stdout).allSatisfy { $0.hasPrefix("keep ") }, "\(blind.stdout)")
        let sums = try await s.run(["sync", target, local, "--checksum", "--json"] + endpoint)
        #expect(sums.status == 0 && Self.plan(sums.stdout).contains("replace \(name)"), "\(sums.stdout)")
        #expect(try Self.digests(local) == files)

        // Each local hash is computed once: the batch keeps it by inode, size and time, and a dry run reads it
        // (here made wrong on purpose, so that every file looks changed) without writing it.
        let id = try #require(events(sums.stdout).first("started")?["token"] as? String)
        let cache = s.w.state + "/batches/\(id).sums"
        let again = try await s.run(["sync", target, local, "--checksum", "--json"] + endpoint)
        #expect(again.status == 0 && Self.plan(again.stdout).allSatisfy { $0.hasPrefix("keep ") }, "\(again.stdout)")
        let kept = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: cache))) as? [String: String])
        #expect(kept.count == files.count, "\(kept)")
        let wrong = try JSONSerialization.data(withJSONObject: kept.mapValues { _ in "00" })
        try wrong.write(to: URL(fileURLWithPath: cache))
        let fooled = try await s.run(["sync", target, local, "--checksum", "--dry-run", "--json"] + endpoint)
        #expect(Self.plan(fooled.stdout).allSatisfy { $0.hasPrefix("replace ") }, "\(fooled.stdout)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: cache)) == wrong, "a dry run writes nothing")
    }

    @Test(arguments: [
        (["sync", "/tmp", "/var/tmp"], Int32(64), "one side is a local folder"),
        (["sync", "http://127.0.0.1:9/a/", "s3://b/p/"], 64, "one side is a local folder"),
        (["sync", "/tmp", "http://127.0.0.1:9/x"], 64, "must end in / to name a folder"),
        (["sync", "/tmp", "http://127.0.0.1:9/x/", "--size-only", "--checksum"], 64, "exclude each other"),
        (["sync", "/tmp", "http://127.0.0.1:9/x/", "--max-delete", "3"], 64, "with --delete"),
        (["sync", "/nonexistent-folder", "http://127.0.0.1:9/x/"], 66, "is not a folder"),
        (["sync", "/nonexistent-folder", "http://127.0.0.1:9/x/", "--dry-run"], 66, "is not a folder"),
    ])
    func badInputIsOneLineAndADocumentedStatus(args: [String], status: Int32, message: String) async throws {
        let w = try Workspace()
        let r = try await w.run(args)
        #expect(r.status == status && r.stderr.contains(message), "\(r)")
        #expect(r.stderr.split(separator: "\n").count == 1 && r.stdout.isEmpty, "\(r)")
        #expect(try w.tokens().isEmpty)
    }
}
