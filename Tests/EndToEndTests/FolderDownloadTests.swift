import Foundation
import Testing

/// `resumectl download URL/ -o DIR`: a folder down as one batch from nginx's autoindex (html and json),
/// `serve`'s JSON listing and a page of plain links; through a counting proxy that cuts, with a SIGKILL in
/// mid-batch; `--skip-existing` then fetches no body; the batch id works with pause, list, show, wait,
/// resume and cancel; and a hostile listing writes nothing outside DIR.
@Suite struct FolderDownloadTests {
    static let MiB = 1 << 20

    /// The folder upload's tree (hard names, four levels, three large files) without its link and FIFO.
    static func makeTree(_ root: String, bigSize: Int, big: Int = 3) throws -> [String: String] {
        let files = try FolderUploadTests.makeTree(root, bigSize: bigSize, big: big)
        unlink(root + "/link")
        unlink(root + "/fifo")
        return files
    }

    /// `files` (relative path → SHA-256) are exactly the files below `dir`.
    static func expectSame(_ dir: String, _ files: [String: String], sourceLocation: SourceLocation = #_sourceLocation)
        throws
    {
        #expect(try filesBelow(dir) == Set(files.keys), "none missing, none extra", sourceLocation: sourceLocation)
        for (relative, digest) in files {
            #expect(try sha256(file: dir + "/" + relative) == digest, "\(relative)", sourceLocation: sourceLocation)
        }
    }

    @Test func nginxListingThroughCutsAndAKillArrivesWholeAndSkipExistingFetchesNoBody() async throws {
        let w = try Workspace()
        let files = try Self.makeTree(w.path("www/tree"), bigSize: 6 * Self.MiB)
        let size = FolderUploadTests.treeSize(w.path("www/tree"), files)
        // Two hours old, at a second that is no minute's first: the copies take the server's Last-Modified,
        // and --skip-existing compares it with the listing's time (to the minute in HTML).
        let old = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 - 7_200).rounded(.down) + 0.5)
        for relative in files.keys {
            try FileManager.default.setAttributes(
                [.modificationDate: old], ofItemAtPath: w.path("www/tree/") + relative)
        }
        // Slowed at the server, not at the client (bytes a slow reader leaves in its socket buffers would be
        // counted at the proxy and lost with the kill), and enough that a checkpoint's sync, slow on a loaded
        // machine, costs little when the kill comes.
        let nginx = try await NginxServer(root: w.path("www"), limitRate: 600_000, serverDirectives: "autoindex on;")
        // Every connection after the first is cut once 1.5 MB went through it.
        let proxy = try FaultProxy(
            upstreamPort: nginx.port, plan: [.pass] + Array(repeating: .cutAfterDownstream(bytes: 1_500_000), count: 60)
        )
        let args = ["download", proxy.url(for: "tree/"), "-o", w.path("dl"), "--json"]
        let p = try w.start(args + ["--checkpoint-interval", "0.2"])
        let id = try await FolderUploadTests.killMidBatch(p)
        let r = try await w.run(args, timeout: .seconds(300))
        #expect(r.status == 0, "\(r)")
        #expect(events(r.stdout).first("started")?["token"] as? String == id, "the same command continues the batch")
        try Self.expectSame(w.path("dl"), files)
        for relative in files.keys.prefix(5) {
            let time =
                try FileManager.default.attributesOfItem(atPath: w.path("dl/") + relative)[.modificationDate] as? Date
            #expect(
                time.map { Int($0.timeIntervalSince1970) } == Int(old.timeIntervalSince1970),
                "\(relative): \(String(describing: time))")
        }
        #expect(proxy.connections.filter(\.triggered).count >= 5, "at least five cuts")
        #expect(
            proxy.bytesDownstream < size * 115 / 100,
            "\(proxy.bytesDownstream) bytes through the proxy for a tree of \(size)")
        let requests = proxy.connections.reduce(0) { $0 + $1.requestLines.count }
        #expect(requests > 0 && requests == nginx.accessLog().count, "every request passed the proxy")
        #expect(try w.tokens().isEmpty)
        #expect(try await w.run(["wait", id]).status == 0)

        let before = nginx.accessLog().count
        let again = try await w.run(args + ["--skip-existing"])
        #expect(again.status == 0, "\(again)")
        #expect(
            events(again.stdout).filter { $0["event"] as? String == "skipped" && $0["path"] != nil }.count
                == files.count, "\(again.stdout)")
        let gets = nginx.accessLog().dropFirst(before).filter { $0.contains(" GET ") && !$0.contains("/ range=") }
        #expect(gets.isEmpty, "no GET of a file's body: \(gets)")
    }

    @Test func serveJSONNginxJSONAndAPageOfLinks() async throws {
        let w = try Workspace()
        let files = try Self.makeTree(w.path("www/tree"), bigSize: 300_000, big: 1)
        // A hand-made page: a file, a folder with its own page, and links the walker must not follow.
        try FileManager.default.createDirectory(atPath: w.path("www/page/sub"), withIntermediateDirectories: true)
        let pageFiles = [
            "a b.bin": try makeRandomFile(path: w.path("www/page/a b.bin"), size: 1234, seed: 5),
            "sub/c.bin": try makeRandomFile(path: w.path("www/page/sub/c.bin"), size: 99, seed: 6),
        ]
        try
            (#"<html><p>Files: <a href="a%20b.bin">one</a>, <a href="sub/">more</a>, <a href="/">home</a>, "#
            + #"<a href="https://example.com/">elsewhere</a>"#)
            .write(toFile: w.path("www/page/index.html"), atomically: true, encoding: .utf8)
        try #"<ul><li><a href="c.bin">c</a><li><a href="../">up</a></ul>"#.write(
            toFile: w.path("www/page/sub/index.html"), atomically: true, encoding: .utf8)
        let nginx = try await NginxServer(root: w.path("www"), serverDirectives: "autoindex on; autoindex_format json;")

        let json = try await w.run(["download", nginx.url(for: "tree/"), "-o", w.path("json")])
        #expect(json.status == 0 && json.stdoutLines.count == files.count, "\(json)")
        try Self.expectSame(w.path("json"), files)

        let page = try await w.run(["download", nginx.url(for: "page/"), "-o", w.path("page"), "--json"])
        #expect(page.status == 0, "\(page)")
        try Self.expectSame(w.path("page"), pageFiles)
        let skipped = events(page.stdout).filter { $0["event"] as? String == "skipped" }.compactMap {
            $0["reason"] as? String
        }
        #expect(skipped.count == 2 && skipped.contains { $0.contains("on another host") }, "\(skipped)")

        try await InProcessServe.with { served in
            try FileManager.default.copyItem(atPath: w.path("www/tree"), toPath: served.path("tree"))
            // Without -o: a folder of the URL's name, here.
            let r = try await w.run(["download", served.url + "/tree/"])
            #expect(r.status == 0, "\(r)")
            try Self.expectSame(w.out + "/tree", files)
        }
    }

    @Test func pauseListShowWaitResumeAndCancelTakeTheBatchID() async throws {
        let w = try Workspace()
        try FileManager.default.createDirectory(atPath: w.path("www/d/sub"), withIntermediateDirectories: true)
        var files: [String: String] = [:]
        for i in 0..<2 {
            files["big \(i).bin"] = try makeRandomFile(
                path: w.path("www/d/big \(i).bin"), size: 4 * Self.MiB, seed: UInt64(i + 1))
        }
        for i in 0..<4 {
            files["sub/s\(i)"] = try makeRandomFile(
                path: w.path("www/d/sub/s\(i)"), size: 10_000 + i, seed: UInt64(i + 10))
        }
        let nginx = try await NginxServer(root: w.path("www"), limitRate: 500_000, serverDirectives: "autoindex on;")
        let url = nginx.url(for: "d/")
        let started = try await w.run(["download", url, "-o", w.path("dl"), "--detach"])
        let id = try #require(started.stdoutLines.last, "\(started)")
        #expect(started.status == 0 && id.hasPrefix("b-"), "\(started)")
        // Paused while a large file is in flight and after sub/s0 is in place (it is removed from the server below).
        try await eventually(timeout: .seconds(30)) {
            let names = (try? filesBelow(w.path("dl"))) ?? []
            return names.contains { $0.hasSuffix(".part") }
                && FileManager.default.fileExists(atPath: w.path("dl/sub/s0"))
        }
        let paused = try await w.run(["pause", id])
        #expect(paused.status == 0 && paused.stderr.contains("paused \(id)"), "\(paused)")
        #expect(try await w.run(["wait", id]).status == 75)
        let listed = try await w.run(["list"])
        #expect(listed.stdout.contains("\(id)  batch  paused"), "\(listed)")
        let shown = try await w.run(["show", id])
        #expect(shown.status == 0 && shown.stdout.contains("\"target\" : \"\(url)\""), "\(shown)")
        // A file the batch fetched is gone from the server meanwhile: said, and its copy stays.
        #expect(FileManager.default.fileExists(atPath: w.path("dl/sub/s0")))
        try FileManager.default.removeItem(atPath: w.path("www/d/sub/s0"))
        let resumed = try await w.run(["resume", id], timeout: .seconds(120))
        #expect(resumed.status == 0, "\(resumed)")
        #expect(resumed.stderr.contains("sub/s0: no longer listed; the copy stays"), "\(resumed.stderr)")
        try Self.expectSame(w.path("dl"), files)
        #expect(try await w.run(["wait", id]).status == 0)

        // cancel: a paused batch into another folder is forgotten with its unfinished downloads; what it finished
        // stays.
        let other = try #require(
            try await w.run(["download", url, "-o", w.path("other"), "--detach"]).stdoutLines.last)
        try await eventually(timeout: .seconds(30)) {
            ((try? filesBelow(w.path("other"))) ?? []).contains { $0.hasSuffix(".part") }
        }
        #expect(try await w.run(["pause", other]).status == 0)
        let cancelled = try await w.run(["cancel", other])
        #expect(cancelled.status == 0 && cancelled.stderr.contains("cancelled \(other)"), "\(cancelled)")
        #expect(try w.tokens().isEmpty && !(try filesBelow(w.path("other"))).contains { $0.hasSuffix(".part") })
        #expect(try await w.run(["resume", other]).status == 66)
    }

    @Test func aHostileListingWritesNothingOutsideTheFolder() async throws {
        let w = try Workspace()
        let www = w.path("www")
        try FileManager.default.createDirectory(atPath: www + "/h/loop", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: www + "/h/planted", withIntermediateDirectories: true)
        try "secret".write(toFile: www + "/secret.txt", atomically: true, encoding: .utf8)
        let ok = try makeRandomFile(path: www + "/h/ok.bin", size: 2000, seed: 1)
        try makeRandomFile(path: www + "/h/planted/x.bin", size: 10, seed: 2)
        try makeRandomFile(path: www + "/h/loop/y.bin", size: 10, seed: 3)
        let other = try await NginxServer(root: www)
        try """
        <a href="../secret.txt">up</a> <a href="%2e%2e/secret.txt">dots</a> <a href="%2E%2E%2Fsecret.txt">slash</a>
        <a href="/secret.txt">absolute</a> <a href="\(other.url(for: "secret.txt"))">other server</a>
        <a href="ok.bin?C=N;O=D">sort</a> <a href="ok.bin">ok</a> <a href="planted/x.bin">through a link</a> <a \
        href="loop/">loop</a>
        """.write(toFile: www + "/h/index.html", atomically: true, encoding: .utf8)
        try #"<a href="../">up</a> <a href="../loop/">me</a> <a href="../../h/">root</a> <a href="y.bin">y</a>"#
            .write(toFile: www + "/h/loop/index.html", atomically: true, encoding: .utf8)
        let nginx = try await NginxServer(root: www)
        // A symbolic link planted where a folder of the listing goes, to a folder outside.
        let out = w.path("dl")
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: w.path("elsewhere"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: out + "/planted", withDestinationPath: w.path("elsewhere"))

        let r = try await w.run(["download", nginx.url(for: "h/"), "-o", out])
        #expect(r.status == 0, "\(r)")
        #expect(try filesBelow(w.path("elsewhere")).isEmpty, "nothing written through the link")
        #expect(try sha256(file: out + "/ok.bin") == ok && w.exists(out + "/loop/y.bin"))
        let everything = try filesBelow(w.dir.path).filter { !$0.hasPrefix("state/") && !$0.hasPrefix("www/") }
        #expect(everything == ["dl/ok.bin", "dl/loop/y.bin"], "\(everything)")
        let lines = splitLines(r.stderr).filter { $0.contains(": skipped, ") }
        #expect(lines.count == 7, "\(r.stderr)")
        #expect(lines.contains { $0.contains("planted") && $0.contains("symbolic link") }, "\(r.stderr)")
        #expect(lines.filter { $0.contains("secret.txt") }.count == 5, "\(r.stderr)")

        // A listing past 64 MiB, and one of 200,000 links: 65, with one line, nothing fetched.
        try FileManager.default.createDirectory(atPath: www + "/huge", withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: www + "/huge/index.html", contents: nil))
        #expect(truncate(www + "/huge/index.html", 100 << 20) == 0)
        let huge = try await w.run(["download", nginx.url(for: "huge/"), "-o", w.path("huge")])
        #expect(huge.status == 65 && huge.stderr.contains("over 64 MiB"), "\(huge)")
        try FileManager.default.createDirectory(atPath: www + "/many", withIntermediateDirectories: true)
        try (0..<200_000).map { "<a href=\"f\($0)\">f</a>\n" }.joined().write(
            toFile: www + "/many/index.html", atomically: true, encoding: .utf8)
        let many = try await w.run(["download", nginx.url(for: "many/"), "-o", w.path("many")], timeout: .seconds(240))
        #expect(many.status == 65 && many.stderr.contains("more than 100000 files"), "\(many)")
        #expect(try filesBelow(w.path("many")).isEmpty)
    }
}
