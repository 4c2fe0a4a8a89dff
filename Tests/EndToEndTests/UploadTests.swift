import Foundation
import Testing

/// `resumectl upload` against Apple's NIOResumableUpload (interop 3, 5, 6), through a cutting proxy
/// where a fault is needed, and against a plain server without draft support.
@Suite struct UploadTests {
    static let size = 3_000_000

    func source(_ w: Workspace, seed: UInt64 = 21) throws -> String {
        try makeRandomFile(path: w.path("www/src.bin"), size: Self.size, seed: seed)
    }

    @Test(arguments: [3, 5, 6])
    func uploadInOneGo(version: Int) async throws {
        let w = try Workspace()
        let digest = try source(w)
        let peer = try await UploadPeer()
        let r = try await w.run([
            "upload", w.path("www/src.bin"), peer.url(for: "v\(version).bin"), "--interop-version", "\(version)",
        ])
        #expect(r.status == 0, "\(r)")
        #expect(r.stdout == peer.url(for: "v\(version).bin") + "\n")
        #expect(try peer.storedSHA256("v\(version).bin") == digest)
        #expect(try w.tokens().isEmpty)
        let post = try #require(peer.requests.first { $0.method == "POST" })
        #expect(post.responseStatuses.first == 104)
        #expect(post.header("Expect") == nil)
    }

    @Test func negotiatesDownFromTheNewestVersion() async throws {
        let w = try Workspace()
        let digest = try source(w)
        let peer = try await UploadPeer()
        let r = try await w.run(["upload", w.path("www/src.bin"), peer.url(for: "n.bin")])
        #expect(r.status == 0, "\(r)")
        #expect(try peer.storedSHA256("n.bin") == digest)
        #expect(peer.requests.map { $0.header("Upload-Draft-Interop-Version") } == ["9", "6"])
    }

    @Test(arguments: [3, 5, 6])
    func cutOnceAfterThe104(version: Int) async throws {
        let w = try Workspace()
        let digest = try source(w)
        let peer = try await UploadPeer()
        // Cut once the 104 is through the proxy: the upload has its URL.
        let proxy = try FaultProxy(
            upstreamPort: peer.port,
            plan: [.cutAfterUpstream(bytes: 2_000_000).throttled(bytesPerSecond: 2_000_000).afterInterimResponse()])
        peer.advertise(origin: proxy.baseURL)
        let r = try await w.run([
            "upload", w.path("www/src.bin"), proxy.url(for: "c.bin"), "--interop-version", "\(version)",
            "--json", "--retry-delay", "0.05",
        ])
        #expect(r.status == 0, "\(r)")
        #expect(try peer.storedSHA256("c.bin") == digest)
        #expect(names(events(r.stdout)).filter { $0 == "retry" }.count == 1)
        #expect(peer.requests.map(\.method) == ["POST", "HEAD", "PATCH"], "\(r.stderr)")
        // Only what the server did not have is sent again: at most the bytes lost in flight at the cut.
        let received = peer.requests.reduce(0) { $0 + $1.bodyBytes }
        #expect(received <= Self.size + (1 << 20), "received \(received)")
    }

    @Test(arguments: [3, 5, 6])
    func cutThreeTimesAtRandomOffsets(version: Int) async throws {
        let w = try Workspace()
        let digest = try source(w)
        let peer = try await UploadPeer()
        // libcurl may open a connection that carries nothing after a cut (its own retry, given up at once
        // because the body cannot be rewound), so the plan holds more cuts than the three asked for.
        var plan = Fault.randomCuts(seed: UInt64(version), count: 6, direction: .upstream, bytes: 200_000...600_000)
            .map { $0.throttled(bytesPerSecond: 2_000_000) }
        plan[0] = plan[0].afterInterimResponse()  // the creation's cut comes after its 104
        let proxy = try FaultProxy(upstreamPort: peer.port, plan: plan)
        peer.advertise(origin: proxy.baseURL)
        let r = try await w.run([
            "upload", w.path("www/src.bin"), proxy.url(for: "r.bin"), "--interop-version", "\(version)",
            "--json", "--retry-delay", "0.05",
        ])
        #expect(r.status == 0, "\(r)")
        let stored: Any = (try? FileManager.default.attributesOfItem(atPath: peer.storedPath("r.bin")))?[.size] ?? "-"
        let requests = peer.requests.map {
            "\($0.method) \($0.responseStatuses) body=\($0.bodyBytes) off=\($0.header("Upload-Offset") ?? "-") "
                + "len=\($0.header("Content-Length") ?? "-")"
        }
        let connections = proxy.connections.map { "\($0.index):\($0.triggered) up=\($0.bytesUpstream)" }
        #expect(
            try peer.storedSHA256("r.bin") == digest, "stored \(stored) bytes; \(requests); \(connections) \(r.stdout)")
        let cuts = proxy.connections.filter(\.triggered).count
        #expect(cuts >= 3, "\(proxy.connections) \(peer.requests)")
        #expect(names(events(r.stdout)).filter { $0 == "retry" }.count == cuts)
        let received = peer.requests.reduce(0) { $0 + $1.bodyBytes }
        #expect(received <= Self.size + cuts * (1 << 20), "received \(received)")
    }

    @Test(arguments: [3, 5, 6])
    func killedAndResumedFromTheToken(version: Int) async throws {
        let w = try Workspace()
        let digest = try source(w)
        let peer = try await UploadPeer()
        let p = try w.start([
            "upload", w.path("www/src.bin"), peer.url(for: "k.bin"), "--interop-version", "\(version)",
            "--limit-rate", "300k", "--json",
        ])
        _ = try await p.waitForLine { line in
            guard line.contains("\"progress\""), let e = events(line).first, let bytes = e["bytes"] as? Int else {
                return false
            }
            return bytes > 300_000
        }
        // The kill comes after the 104's upload URL reached the token, at no particular byte.
        try await eventually(timeout: .seconds(10)) {
            guard let id = try w.tokens().first else { return false }
            return (try w.token(id)["upload"] as? [String: Any])?["uploadURL"] != nil
        }
        p.send(signal: SIGKILL)
        _ = try await p.wait()
        let id = try #require(try w.tokens().first)
        let upload = try #require(try w.token(id)["upload"] as? [String: Any])
        #expect((upload["uploadURL"] as? String)?.contains("/resumable_upload/") == true, "\(upload) \(peer.requests)")
        let r = try await w.run(["resume", id, "--json"])
        #expect(r.status == 0, "\(r)")
        #expect(try peer.storedSHA256("k.bin") == digest)
        let started = try #require(events(r.stdout).first("started"))
        #expect((started["offset"] as? Int ?? 0) > 0)
    }

    @Test func sigintKeepsTheTokenAndResumeFinishes() async throws {
        let w = try Workspace()
        let digest = try source(w)
        let peer = try await UploadPeer()
        let p = try w.start(["upload", w.path("www/src.bin"), peer.url(for: "i.bin"), "--limit-rate", "300k", "--json"])
        _ = try await p.waitForLine { $0.contains("\"progress\"") }
        p.send(signal: SIGINT)
        let stopped = try await p.wait()
        #expect(stopped.status == 130, "\(stopped)")
        #expect(stopped.stderr.contains("resumectl resume u-"))
        let r = try await w.run(["resume", try #require(try w.tokens().first)])
        #expect(r.status == 0, "\(r)")
        #expect(try peer.storedSHA256("i.bin") == digest)
    }

    @Test func plainServerGetsAPlainUpload() async throws {
        let w = try Workspace()
        let digest = try source(w)
        let peer = try await UploadPeer(plainMode: true)
        let r = try await w.run(["upload", w.path("www/src.bin"), peer.url(for: "p.bin")])
        #expect(r.status == 0, "\(r)")
        #expect(try peer.storedSHA256("p.bin") == digest)
    }

    @Test func plainServerCutTellsTheUserAndResendsEverything() async throws {
        let w = try Workspace()
        let digest = try source(w)
        let peer = try await UploadPeer(plainMode: true)
        // The first connection carries the protocol probe (OPTIONS), the second the upload.
        let proxy = try FaultProxy(upstreamPort: peer.port, plan: [.pass, .cutAfterUpstream(bytes: 1_000_000)])
        let cut = try await w.run([
            "upload", w.path("www/src.bin"), proxy.url(for: "p.bin"), "--retries", "0", "--json",
        ])
        #expect(cut.status == 75, "\(cut)")
        #expect(cut.stderr.contains("cannot resume"), "\(cut)")
        let id = try #require(try w.tokens().first)
        #expect((try w.token(id)["upload"] as? [String: Any])?["resumable"] as? Bool == false)
        let r = try await w.run(["resume", id])
        #expect(r.status == 0, "\(r)")
        #expect(r.stderr.contains("the server cannot resume uploads"), "\(r)")
        #expect(try peer.storedSHA256("p.bin") == digest)
    }

    @Test func changedSourceIsRefusedAndNothingIsSent() async throws {
        let w = try Workspace()
        _ = try source(w)
        let peer = try await UploadPeer()
        let proxy = try FaultProxy(
            upstreamPort: peer.port,
            plan: [.cutAfterUpstream(bytes: 2_000_000).throttled(bytesPerSecond: 2_000_000).afterInterimResponse()])
        #expect(
            try await w.run([
                "upload", w.path("www/src.bin"), proxy.url(for: "s.bin"), "--retries", "0", "--interop-version", "6",
            ]).status == 75)
        let before = peer.requests.count
        _ = try source(w, seed: 99)  // same size, other bytes
        let r = try await w.run(["resume", try #require(try w.tokens().first)])
        #expect(r.status == 65, "\(r)")
        #expect(r.stderr.contains("changed since the upload began"))
        #expect(peer.requests.count == before)
    }

    @Test func cancelDeletesTheServerUpload() async throws {
        let w = try Workspace()
        _ = try source(w)
        let peer = try await UploadPeer()
        let proxy = try FaultProxy(
            upstreamPort: peer.port,
            plan: [.cutAfterUpstream(bytes: 2_000_000).throttled(bytesPerSecond: 2_000_000).afterInterimResponse()])
        #expect(
            try await w.run([
                "upload", w.path("www/src.bin"), proxy.url(for: "d.bin"), "--retries", "0", "--interop-version", "6",
            ]).status == 75)
        let id = try #require(try w.tokens().first)
        let uploadURL = try #require((try w.token(id)["upload"] as? [String: Any])?["uploadURL"] as? String)
        let r = try await w.run(["cancel", id])
        #expect(r.status == 0, "\(r)")
        #expect(r.stderr.contains("the server dropped the upload"))
        #expect(try w.tokens().isEmpty)
        let head = try await runProcess(
            curlBinary,
            [
                "-s", "-o", "/dev/null", "-w", "%{http_code}", "-I",
                "-H", "Upload-Draft-Interop-Version: 6", uploadURL,
            ])
        #expect(head.stdout == "404")
    }

    @Test func refusedCreationFailsWithoutToken() async throws {
        let w = try Workspace()
        _ = try source(w)
        let server = try await MisbehavingServer(content: [], behaviors: [.status(403, count: 100)])
        let r = try await w.run(["upload", w.path("www/src.bin"), server.url(for: "x.bin")])
        #expect(r.status == 1, "\(r)")
        #expect(r.stderr.contains("403"))
        #expect(try w.tokens().isEmpty)
    }
}
