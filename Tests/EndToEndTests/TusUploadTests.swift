import Foundation
import Testing

/// `resumectl upload` against tuspyserver (tus 1.0.0 under uvicorn), through a cutting proxy where a
/// fault is needed; checksums against a scripted tus peer (tuspyserver offers none); and what `auto`
/// picks for each kind of server. Serialized: each test starts a Python server, and a dozen
/// interpreters importing FastAPI at once would starve the other suites' peers of CPU.
@Suite(.serialized) struct TusUploadTests {
    static let size = 3_000_000

    func source(_ w: Workspace, seed: UInt64 = 31) throws -> String {
        try makeRandomFile(path: w.path("www/src.bin"), size: Self.size, seed: seed)
    }

    /// The one upload the server holds.
    func stored(_ server: TusServer) throws -> String {
        let uploads = server.storedUploads()
        try #require(uploads.count == 1, "\(uploads)")
        return try sha256(file: server.files.path(uploads[0]))
    }

    @Test func autoChoosesTusAndSendsTheBodyOnce() async throws {
        let w = try Workspace()
        let digest = try source(w)
        let server = try await TusServer()
        let proxy = try FaultProxy(upstreamPort: server.port)
        let r = try await w.run(["upload", w.path("www/src.bin"), proxy.url(for: "files/"), "--json"])
        #expect(r.status == 0, "\(r)")
        #expect(try stored(server) == digest)
        #expect(try w.tokens().isEmpty)
        // OPTIONS, POST and PATCH heads are a few hundred bytes each; the body crossed once.
        #expect(proxy.bytesUpstream >= Self.size && proxy.bytesUpstream < Self.size + 16_384, "\(proxy.bytesUpstream)")
        #expect(events(r.stdout).first("completed")?["bytes"] as? Int == Self.size)
    }

    @Test func pinnedTusUploadsInChunks() async throws {
        let w = try Workspace()
        let digest = try source(w)
        let server = try await TusServer()
        let r = try await w.run([
            "upload", w.path("www/src.bin"), server.endpoint, "--protocol", "tus", "--chunk-size", "1M",
        ])
        #expect(r.status == 0, "\(r)")
        #expect(r.stdout == server.endpoint + "\n")
        #expect(try stored(server) == digest)
    }

    @Test func cutThreeTimesAtRandomOffsets() async throws {
        let w = try Workspace()
        let digest = try source(w)
        let server = try await TusServer()
        let plan =
            [.pass]
            + Fault.randomCuts(seed: 7, count: 6, direction: .upstream, bytes: 200_000...600_000)
            .map { $0.throttled(bytesPerSecond: 2_000_000) }
        let proxy = try FaultProxy(upstreamPort: server.port, plan: plan)
        let r = try await w.run([
            "upload", w.path("www/src.bin"), proxy.url(for: "files/"), "--json", "--retry-delay", "0.05",
        ])
        #expect(r.status == 0, "\(r)")
        #expect(try stored(server) == digest)
        let cuts = proxy.connections.filter(\.triggered).count
        #expect(cuts >= 3, "\(proxy.connections)")
        // A cut can land after the server's answer already got through: that one needs no retry.
        let retries = names(events(r.stdout)).filter { $0 == "retry" }.count
        #expect(retries <= cuts && retries >= cuts - 1, "\(retries) retries for \(cuts) cuts")
        // Only what the server did not have is sent again.
        #expect(proxy.bytesUpstream <= Self.size + cuts * 700_000, "\(proxy.bytesUpstream)")
    }

    @Test func killedAndResumedFromTheToken() async throws {
        let w = try Workspace()
        let digest = try source(w)
        let server = try await TusServer()
        let p = try w.start(["upload", w.path("www/src.bin"), server.endpoint, "--limit-rate", "400k", "--json"])
        _ = try await p.waitForLine { line in
            guard line.contains("\"progress\""), let e = events(line).first, let bytes = e["bytes"] as? Int else {
                return false
            }
            return bytes > 500_000
        }
        // The creation's Location reached the token right after the POST.
        try await eventually(timeout: .seconds(10)) {
            guard let id = try w.tokens().first else { return false }
            return (try w.token(id)["upload"] as? [String: Any])?["uploadURL"] != nil
        }
        p.send(signal: SIGKILL)
        _ = try await p.wait()
        let id = try #require(try w.tokens().first)
        let upload = try #require(try w.token(id)["upload"] as? [String: Any])
        #expect(upload["protocol"] as? String == "tus")
        #expect(upload["expires"] as? String != nil, "\(upload)")
        #expect(upload["interopVersion"] == nil)
        let list = try await w.run(["list"])
        #expect(list.stdout.contains("expires "), "\(list)")
        let r = try await w.run(["resume", id, "--json"])
        #expect(r.status == 0, "\(r)")
        #expect(try stored(server) == digest)
        let started = try #require(events(r.stdout).first("started"))
        #expect((started["offset"] as? Int ?? 0) > 300_000, "\(started)")
    }

    /// A cut run leaves a token with the upload URL (at the proxy, which must live on); the server's copy is partial.
    func cutUpload(_ w: Workspace, _ server: TusServer) async throws -> (
        id: String, uploadURL: String, proxy: FaultProxy
    ) {
        // The probe has a connection of its own; POST and PATCH may share the next one or not.
        let proxy = try FaultProxy(
            upstreamPort: server.port,
            plan: [
                .pass, .cutAfterUpstream(bytes: 1_200_000).throttled(bytesPerSecond: 2_000_000),
                .cutAfterUpstream(bytes: 1_000_000).throttled(bytesPerSecond: 2_000_000),
            ])
        let cut = try await w.run(["upload", w.path("www/src.bin"), proxy.url(for: "files/"), "--retries", "0"])
        #expect(cut.status == 75, "\(cut)")
        let id = try #require(try w.tokens().first)
        let url = try #require((try w.token(id)["upload"] as? [String: Any])?["uploadURL"] as? String)
        // The server may still be writing bytes that were in flight at the cut: wait until its copy is still.
        var last = -2
        for _ in 0..<50 {
            let now = w.size(server.storedPath(uploadURL: url))
            if now == last && now > 0 { break }
            last = now
            try await Task.sleep(for: .milliseconds(200))
        }
        return (id, url, proxy)
    }

    @Test func changedSourceIsRefused() async throws {
        let w = try Workspace()
        _ = try source(w)
        let server = try await TusServer()
        let (id, url, proxy) = try await cutUpload(w, server)
        defer { proxy.stop() }
        #expect(url.hasPrefix(proxy.baseURL))  // so every later request would cross the proxy
        let before = (proxy.connectionCount, proxy.bytesUpstream)
        _ = try source(w, seed: 99)  // same size, other bytes
        let r = try await w.run(["resume", id])
        #expect(r.status == 65, "\(r)")
        #expect(r.stderr.contains("changed since the upload began"))
        #expect(proxy.connectionCount == before.0 && proxy.bytesUpstream == before.1, "nothing may be sent")
    }

    @Test func cancelDeletesTheServerUpload() async throws {
        let w = try Workspace()
        _ = try source(w)
        let server = try await TusServer()
        let (id, url, proxy) = try await cutUpload(w, server)
        defer { proxy.stop() }
        #expect(w.exists(server.storedPath(uploadURL: url)))
        let r = try await w.run(["cancel", id])
        #expect(r.status == 0, "\(r)")
        #expect(r.stderr.contains("the server dropped the upload"), "\(r)")
        #expect(try w.tokens().isEmpty)
        #expect(!w.exists(server.storedPath(uploadURL: url)))
        #expect(server.storedUploads().isEmpty)
    }

    @Test func expiredUploadIsCreatedAnew() async throws {
        let w = try Workspace()
        let digest = try source(w)
        let server = try await TusServer(expireSeconds: 3)
        let (id, url, proxy) = try await cutUpload(w, server)
        defer { proxy.stop() }
        try await Task.sleep(for: .seconds(4))
        let r = try await w.run(["resume", id, "--json"])
        #expect(r.status == 0, "\(r)")
        let restarted = try #require(events(r.stdout).first("restarted"), "\(r.stdout)")
        #expect((restarted["reason"] as? String)?.contains("410") == true, "\(restarted)")
        let fresh = server.storedUploads().filter { !url.hasSuffix($0) }
        try #require(fresh.count == 1, "\(server.storedUploads())")
        #expect(try sha256(file: server.files.path(fresh[0])) == digest)
    }

    @Test func serverMaxSizeBelowTheFileFailsAtOnce() async throws {
        let w = try Workspace()
        _ = try source(w)
        let server = try await TusServer(maxSize: 1_000_000)
        let r = try await w.run(["upload", w.path("www/src.bin"), server.endpoint])
        #expect(r.status == 1, "\(r)")
        #expect(r.stderr.contains("Tus-Max-Size"), "\(r)")
        #expect(server.storedUploads().isEmpty)
        #expect(try w.tokens().isEmpty)
    }

    @Test func checksumUsesTheStrongestAlgorithmAndACorruptPieceIsResent() async throws {
        let w = try Workspace()
        let digest = try source(w)
        let peer = try await ScriptedTusPeer(algorithms: ["sha1", "sha256", "md5"], corruptPatches: [1])
        let r = try await w.run([
            "upload", w.path("www/src.bin"), peer.endpoint, "--chunk-size", "1M", "--json", "--retry-delay", "0.05",
        ])
        #expect(r.status == 0, "\(r)")
        #expect(peer.storedSHA256() == digest)
        let patches = peer.requests.filter { $0.method == "PATCH" }
        #expect(patches.allSatisfy { $0.header("Upload-Checksum")?.hasPrefix("sha256 ") == true }, "\(patches)")
        #expect(patches.map { $0.finalStatus } == [204, 460, 204, 204], "\(patches)")
        // The refused piece went again, from the same offset.
        #expect(patches[1].header("Upload-Offset") == patches[2].header("Upload-Offset"))
        #expect(names(events(r.stdout)).filter { $0 == "retry" }.count == 1)
    }

    @Test func autoAgainstTheDraftPeerChoosesIETF() async throws {
        let w = try Workspace()
        let digest = try source(w)
        let peer = try await UploadPeer()
        let r = try await w.run(["upload", w.path("www/src.bin"), peer.url(for: "a.bin")])
        #expect(r.status == 0, "\(r)")
        #expect(try peer.storedSHA256("a.bin") == digest)
        // The probe learned version 6 from the peer's 400, so the body went once, with version 6.
        #expect(peer.requests.map(\.method) == ["OPTIONS", "POST"], "\(peer.requests)")
        #expect(peer.requests.last?.header("Upload-Draft-Interop-Version") == "6")
        #expect(peer.requests.reduce(0) { $0 + $1.bodyBytes } == Self.size)
    }

    @Test(arguments: ["auto", "plain"])
    func plainServerGetsOneWholeUpload(choice: String) async throws {
        let w = try Workspace()
        let digest = try source(w)
        let peer = try await UploadPeer(plainMode: true)
        let r = try await w.run(["upload", w.path("www/src.bin"), peer.url(for: "p.bin"), "--protocol", choice])
        #expect(r.status == 0, "\(r)")
        #expect(try peer.storedSHA256("p.bin") == digest)
        let posts = peer.requests.filter { $0.method == "POST" }
        #expect(posts.count == 1)
        #expect((posts.first?.header("Upload-Draft-Interop-Version") == nil) == (choice == "plain"))
        #expect(peer.requests.contains { $0.method == "OPTIONS" } == (choice == "auto"))
    }
}
