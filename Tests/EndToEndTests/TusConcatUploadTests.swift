import Foundation
import Testing

/// `resumectl upload --connections N` to tuspyserver, which offers tus concatenation: N partial uploads at
/// once, then the final one, counted at a proxy; killed and resumed without a partial created twice; and
/// the one line a server that cannot append in parallel gets. Serialized for the same reason as
/// `TusUploadTests`: each test starts a Python server.
@Suite(.serialized) struct TusConcatUploadTests {
    static let size = 3_000_000

    /// The request lines the proxy saw going upstream, all connections, in accept order.
    static func requests(_ proxy: FaultProxy) -> [String] { proxy.connections.flatMap(\.requestLines) }

    static func count(_ method: String, _ proxy: FaultProxy) -> Int {
        requests(proxy).filter { $0.hasPrefix(method + " ") }.count
    }

    /// Every connection forwarded at `bytesPerSecond`, each on its own: a link with a per-connection limit.
    static func limited(_ port: Int, bytesPerSecond: Int) throws -> FaultProxy {
        try FaultProxy(
            upstreamPort: port, plan: Array(repeating: .throttle(bytesPerSecond: bytesPerSecond), count: 10_000))
    }

    @Test func fourPartialUploadsAtOnceThenTheFinalOne() async throws {
        let w = try Workspace()
        let digest = try makeRandomFile(path: w.path("www/src.bin"), size: Self.size, seed: 56)
        let server = try await TusServer()
        let proxy = try FaultProxy(upstreamPort: server.port)
        let r = try await w.run([
            "upload", w.path("www/src.bin"), proxy.url(for: "files/"), "--connections", "4", "--json",
        ])
        #expect(r.status == 0, "\(r)")
        #expect(!r.stderr.contains("one connection"), "\(r.stderr)")
        // The result is the final upload; tuspyserver drops the partials once it joined them.
        let completed = try #require(events(r.stdout).first("completed"))
        let location = try #require(completed["url"] as? String)
        #expect(location.hasPrefix(proxy.url(for: "files/")) && location != proxy.url(for: "files/"), "\(location)")
        #expect(server.storedUploads().count == 1, "\(server.storedUploads())")
        #expect(try sha256(file: server.storedPath(uploadURL: location)) == digest)
        // One OPTIONS, four partial creations and the final one; every PATCH from a partial's own offset.
        #expect(Self.count("OPTIONS", proxy) == 1, "\(Self.requests(proxy))")
        #expect(Self.count("POST", proxy) == 5, "\(Self.requests(proxy))")
        #expect(Self.count("PATCH", proxy) >= 4, "\(Self.requests(proxy))")
        // Side by side: the probe's connection and one for each partial at least.
        #expect(proxy.connectionCount >= 5, "\(proxy.connections.map(\.requestLines))")
        // The body crossed once, plus request heads.
        #expect(proxy.bytesUpstream >= Self.size && proxy.bytesUpstream < Self.size + 32_768, "\(proxy.bytesUpstream)")
        #expect(try w.tokens().isEmpty)
    }

    @Test func killedMidwayThenResumedCreatesNoPartialTwice() async throws {
        let w = try Workspace()
        let size = 8_000_000
        let digest = try makeRandomFile(path: w.path("www/src.bin"), size: size, seed: 57)
        let server = try await TusServer()
        // 2 MB/s shared by the four partials: about four seconds for the file, so the kill lands mid-way. The client
        // paces itself, so little more than it counted as sent is in socket buffers when it dies.
        let proxy = try FaultProxy(upstreamPort: server.port)
        let p = try w.start([
            "upload", w.path("www/src.bin"), proxy.url(for: "files/"), "--connections", "4", "--limit-rate", "2M",
            "--json",
        ])
        _ = try await p.waitForLine(timeout: .seconds(60)) { line in
            guard line.contains("\"progress\""), let bytes = events(line).first?["bytes"] as? Int else { return false }
            return bytes > size / 3
        }
        // Every partial's creation answered is in the token before its PATCH goes.
        try await eventually(timeout: .seconds(10)) {
            guard let id = try w.tokens().first,
                let concat = (try w.token(id)["upload"] as? [String: Any])?["concat"] as? [String: Any],
                let kept = concat["partials"] as? [[String: Any]]
            else { return false }
            return kept.count == 4 && kept.allSatisfy { $0["url"] != nil }
        }
        #expect(p.isRunning, "the upload ended before its kill")
        p.send(signal: SIGKILL)
        _ = try await p.wait()
        #expect(Self.count("POST", proxy) == 4, "\(Self.requests(proxy))")
        // What the server holds once the bytes in flight at the kill landed: the four partials' files.
        var held = -1
        for _ in 0..<50 {
            let now = server.storedUploads().map { w.size(server.files.path($0)) }.reduce(0, +)
            if now == held { break }
            held = now
            try await Task.sleep(for: .milliseconds(200))
        }
        #expect(server.storedUploads().count == 4 && held > size / 4 && held < size, "\(held)")
        let id = try #require(try w.tokens().first)
        let show = try await w.run(["show", id])
        #expect(show.stderr.contains("0 of 4 partial uploads complete"), "\(show)")
        let list = try await w.run(["list", "--json"])
        #expect(list.stdout.contains("\"partials\":4"), "\(list)")

        let before = (bytes: proxy.bytesUpstream, heads: Self.count("HEAD", proxy))
        let r = try await w.run(["resume", id, "--json"], timeout: .seconds(120))
        #expect(r.status == 0, "\(r)")
        let location = try #require(events(r.stdout).first("completed")?["url"] as? String)
        #expect(try sha256(file: server.storedPath(uploadURL: location)) == digest)
        // The four partial creations of the first run and the final one: the resume asked each partial for its
        // offset (HEAD) and went on from there.
        #expect(Self.count("POST", proxy) == 5, "\(Self.requests(proxy))")
        #expect(Self.count("HEAD", proxy) - before.heads == 4, "\(Self.requests(proxy))")
        // The resume sent what the server did not hold, plus request heads: nothing twice.
        let resent = proxy.bytesUpstream - before.bytes
        #expect(resent >= size - held && resent <= size - held + 16_384, "sent \(resent) for \(size - held) missing")
        #expect(try w.tokens().isEmpty)
    }

    @Test func pausedKeepsEveryPartialThenCancelDropsThem() async throws {
        let w = try Workspace()
        _ = try makeRandomFile(path: w.path("www/src.bin"), size: 8_000_000, seed: 62)
        let server = try await TusServer()
        let proxy = try FaultProxy(upstreamPort: server.port)
        let p = try w.start([
            "upload", w.path("www/src.bin"), proxy.url(for: "files/"), "--connections", "4", "--limit-rate", "1M",
        ])
        var id = ""
        try await eventually(timeout: .seconds(30)) {
            guard let first = try w.tokens().first,
                let concat = (try w.token(first)["upload"] as? [String: Any])?["concat"] as? [String: Any],
                let kept = concat["partials"] as? [[String: Any]]
            else { return false }
            id = first
            return kept.count == 4 && kept.allSatisfy { $0["url"] != nil }
        }
        #expect(p.isRunning, "the upload ended before its pause")
        let pause = try await w.run(["pause", id])
        #expect(pause.status == 0, "\(pause)")
        let paused = try await p.wait()
        #expect(paused.status == 75, "\(paused)")
        let kept = try #require(
            ((try w.token(id)["upload"] as? [String: Any])?["concat"] as? [String: Any])?["partials"]
                as? [[String: Any]])
        #expect(kept.count == 4 && kept.allSatisfy { $0["url"] != nil }, "\(kept)")
        #expect(server.storedUploads().count == 4, "\(Self.requests(proxy)) \(paused)")
        let cancel = try await w.run(["cancel", id])
        #expect(cancel.status == 0, "\(cancel)")
        for i in 1...4 { #expect(cancel.stderr.contains("the server dropped partial upload \(i)"), "\(cancel)") }
        // tus termination: a DELETE for each partial, and the server holds none of them.
        #expect(Self.count("DELETE", proxy) == 4, "\(Self.requests(proxy))")
        #expect(server.storedUploads().isEmpty, "\(server.storedUploads())")
        #expect(try w.tokens().isEmpty)
    }

    /// `--detach` keeps `--connections`: the process in the background sends the four partials and the final
    /// upload, and `wait` prints what the upload in the foreground prints (the target).
    @Test func detachedItSendsThePartialsAndTheFinalUpload() async throws {
        let w = try Workspace()
        let reaper = Reaper(w)
        defer { reaper.stopAll() }
        let digest = try makeRandomFile(path: w.path("www/src.bin"), size: Self.size, seed: 63)
        let server = try await TusServer()
        let proxy = try FaultProxy(upstreamPort: server.port)
        let r = try await w.run(
            [
                "upload", w.path("www/src.bin"), proxy.url(for: "files/"), "--connections", "4", "--limit-rate", "1M",
                "--detach",
            ], timeout: .seconds(30))
        #expect(r.status == 0 && r.stdoutLines.count == 1, "\(r)")
        let id = try #require(r.stdoutLines.first)
        #expect(id.hasPrefix("u-"), "\(r)")
        let waited = try await w.run(["wait", id], timeout: .seconds(120))
        #expect(waited.status == 0 && waited.stdoutLines == [proxy.url(for: "files/")], "\(waited)")
        // tuspyserver drops the partials once it joined them: the final upload alone is left.
        let stored = server.storedUploads()
        #expect(stored.count == 1, "\(stored)")
        #expect(try sha256(file: server.files.path(try #require(stored.first))) == digest)
        #expect(Self.count("POST", proxy) == 5, "\(Self.requests(proxy))")
        #expect(try w.tokens().isEmpty)
    }

    @Test func aTusServerWithoutConcatenationGetsOneStreamAndALine() async throws {
        let w = try Workspace()
        let digest = try makeRandomFile(path: w.path("www/src.bin"), size: Self.size, seed: 58)
        let server = try await TusServer(without: ["concatenation"])
        let proxy = try FaultProxy(upstreamPort: server.port)
        let r = try await w.run(["upload", w.path("www/src.bin"), proxy.url(for: "files/"), "--connections", "4"])
        #expect(r.status == 0, "\(r)")
        let lines = r.stderr.split(separator: "\n").filter { $0.contains("one connection") }
        #expect(lines.count == 1, "\(r.stderr)")
        let why = "warning: one connection: the server cannot append in parallel (its tus offers no concatenation)"
        #expect(lines.first?.hasSuffix(why) == true, "\(r.stderr)")
        #expect(Self.count("POST", proxy) == 1, "\(Self.requests(proxy))")
        #expect(server.storedUploads().count == 1)
        #expect(try sha256(file: server.files.path(server.storedUploads()[0])) == digest)
    }

    @Test func aDraftServerGetsOneStreamAndALine() async throws {
        let w = try Workspace()
        let digest = try makeRandomFile(path: w.path("www/src.bin"), size: Self.size, seed: 59)
        try await InProcessServe.with { served in
            let proxy = try FaultProxy(upstreamPort: served.port)
            let r = try await w.run([
                "upload", w.path("www/src.bin"), proxy.url(for: "inbox/src.bin"), "--protocol", "ietf",
                "--connections", "4",
            ])
            #expect(r.status == 0, "\(r)")
            let line =
                "warning: one connection: the server cannot append in parallel (it speaks the resumable-upload draft)\n"
            #expect(r.stderr.contains(line), "\(r.stderr)")
            #expect(Self.count("POST", proxy) == 1 && Self.count("OPTIONS", proxy) == 0, "\(Self.requests(proxy))")
            #expect(try sha256(file: served.path("inbox/src.bin")) == digest)
        }
    }

    @Test func aPlainServerGetsOneStreamAndALine() async throws {
        let w = try Workspace()
        _ = try makeRandomFile(path: w.path("www/src.bin"), size: 100_000, seed: 60)
        try await InProcessServe.with { served in
            let r = try await w.run([
                "upload", w.path("www/src.bin"), "http://127.0.0.1:\(served.port)/inbox/p.bin", "--protocol", "plain",
                "--connections", "2",
            ])
            #expect(r.status == 0, "\(r)")
            #expect(r.stderr.contains("warning: one connection: the server cannot append in parallel\n"), "\(r.stderr)")
        }
    }

    /// `serve` speaks the draft and tus at one URL. Under `auto` with `--connections`, the draft's answer is
    /// followed by a tus OPTIONS: tus is chosen when it offers concatenation, else the draft with the line.
    @Test func autoAsksADraftServerAgainAsTus() async throws {
        let w = try Workspace()
        let digest = try makeRandomFile(path: w.path("www/src.bin"), size: Self.size, seed: 61)
        try await InProcessServe.with { served in
            let options = try await CurlExchange.run([
                "-X", "OPTIONS", "-H", "Tus-Resumable: 1.0.0", "http://127.0.0.1:\(served.port)/inbox/",
            ])
            #expect(options.status == 204 || options.status == 200, "\(options)")
            #expect((options["tus-extension"] ?? "").contains("concatenation"), "\(options)")
            let proxy = try FaultProxy(upstreamPort: served.port)
            let r = try await w.run([
                "upload", w.path("www/src.bin"), proxy.url(for: "inbox/src.bin"), "--connections", "3",
            ])
            #expect(r.status == 0, "\(r)")
            // The draft's OPTIONS, then tus's: three partials and the final, no one-connection line.
            #expect(Self.count("OPTIONS", proxy) == 2, "\(Self.requests(proxy))")
            #expect(!r.stderr.contains("one connection"), "\(r.stderr)")
            #expect(Self.count("POST", proxy) == 4, "\(Self.requests(proxy))")
            #expect(try sha256(file: served.path("inbox/src.bin")) == digest)
        }
    }
}
