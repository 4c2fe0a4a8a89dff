import Foundation
import Testing

/// Credentials go only to the origin the user named; redirects are followed, but the token keeps the
/// URL the user gave.
@Suite struct SafetyTests {
    @Test func redirectIsFollowedWithoutCredentialsAndTheTokenKeepsTheGivenURL() async throws {
        let w = try Workspace()
        let content = randomBytes(count: 2_000_000, seed: 41)
        let target = try await MisbehavingServer(content: content, behaviors: [.cutsEveryResponse(afterBytes: 800_000)])
        let nginx = try await NginxServer(
            root: w.path("www"),
            serverDirectives: "location = /redir { return 302 \(target.url(for: "file.bin")); }")
        let r = try await w.run([
            "download", nginx.url(for: "redir"), "-o", "r.bin", "--retries", "0",
            "-H", "Authorization: Bearer secret-token", "-H", "Cookie: session=abc", "-H", "X-Trace: 7",
        ])
        #expect(r.status == 75, "\(r)")
        let id = try #require(try w.tokens().first)
        let token = try w.token(id)
        #expect(token["url"] as? String == nginx.url(for: "redir"))
        #expect((token["download"] as? [String: Any])?["effectiveURL"] as? String == target.url(for: "file.bin"))
        let text = try String(contentsOfFile: w.state + "/tokens/\(id).json", encoding: .utf8)
        #expect(!text.contains("secret-token") && !text.contains("session=abc") && text.contains("X-Trace: 7"))
        // The other origin never saw the credentials, only the harmless header.
        #expect(target.requests.allSatisfy { $0.header("Authorization") == nil && $0.header("Cookie") == nil })
        #expect(target.requests.allSatisfy { $0.header("X-Trace") == "7" })

        // A resume asks the given URL again and continues at the target with If-Range.
        let resumed = try await w.run([
            "resume", id, "-H", "Authorization: Bearer secret-token", "--retry-delay", "0.01",
        ])
        #expect(resumed.status == 0, "\(resumed)")
        #expect(try sha256(file: w.out + "/r.bin") == sha256(content))
        #expect(nginx.accessLog().filter { $0.contains("/redir") }.count >= 2)
        #expect(target.requests.dropFirst().allSatisfy { $0.header("If-Range") != nil })
        #expect(target.requests.allSatisfy { $0.header("Authorization") == nil })
    }

    @Test func uploadResourceOnAnotherOriginGetsNoCredentials() async throws {
        let w = try Workspace()
        let digest = try makeRandomFile(path: w.path("www/src.bin"), size: 3_000_000, seed: 42)
        let peer = try await UploadPeer()
        // The 104 names the same server under another host name: another origin.
        peer.advertise(origin: "http://localhost:\(peer.port)")
        let proxy = try FaultProxy(
            upstreamPort: peer.port,
            plan: [.cutAfterUpstream(bytes: 2_000_000).throttled(bytesPerSecond: 2_000_000).afterInterimResponse()])
        let r = try await w.run([
            "upload", w.path("www/src.bin"), proxy.url(for: "o.bin"), "--interop-version", "6",
            "--retry-delay", "0.05", "-H", "Authorization: Bearer secret-token",
        ])
        #expect(r.status == 0, "\(r)")
        #expect(try peer.storedSHA256("o.bin") == digest)
        let post = try #require(peer.requests.first { $0.method == "POST" })
        #expect(post.header("Authorization") == "Bearer secret-token")
        let others = peer.requests.filter { $0.method != "POST" }
        #expect(!others.isEmpty && others.allSatisfy { $0.header("Authorization") == nil }, "\(others)")
    }

    /// Every header `Redact.isSecretHeader` marks (here X-Api-Key), not only Authorization and Cookie, stays
    /// with the origin the user named when a redirect leads to another one (a server on another port).
    @Test(arguments: [1, 4])
    func redirectToAnotherOriginGetsNoSecretHeader(connections: Int) async throws {
        let w = try Workspace()
        let content = randomBytes(count: 3_000_000, seed: 47)
        let target = try await MisbehavingServer(content: content)
        let nginx = try await NginxServer(
            root: w.path("www"),
            serverDirectives: "location = /redir { return 302 \(target.url(for: "file.bin")); }")
        let r = try await w.run([
            "download", nginx.url(for: "redir"), "-o", "r.bin", "--connections", "\(connections)",
            "-H", "X-Api-Key: s3cret", "-H", "X-Trace: 1",
        ])
        #expect(r.status == 0, "\(r)")
        #expect(try sha256(file: w.out + "/r.bin") == sha256(content))
        #expect(!target.requests.isEmpty)
        #expect(target.requests.allSatisfy { $0.header("X-Api-Key") == nil }, "\(target.requests)")
        #expect(target.requests.allSatisfy { $0.header("X-Trace") == "1" }, "\(target.requests)")
    }

    /// A tus creation whose `Location` names another origin (a proxy on another port): the PATCHes that go
    /// there carry no X-Api-Key, but the harmless X-Trace.
    @Test func tusUploadOnAnotherOriginGetsNoSecretHeader() async throws {
        let w = try Workspace()
        let digest = try makeRandomFile(path: w.path("src.bin"), size: 2_500_000, seed: 48)
        let peer = try await ScriptedTusPeer()
        let other = try FaultProxy(upstreamPort: peer.port)
        defer { other.stop() }
        peer.advertise(origin: other.baseURL)
        let r = try await w.run([
            "upload", w.path("src.bin"), peer.endpoint, "--protocol", "tus", "--chunk-size", "1M",
            "-H", "X-Api-Key: s3cret", "-H", "X-Trace: 1",
        ])
        #expect(r.status == 0, "\(r)")
        #expect(peer.storedSHA256() == digest)
        let post = try #require(peer.requests.first { $0.method == "POST" })
        #expect(post.header("X-Api-Key") == "s3cret" && post.header("X-Trace") == "1", "\(post)")
        let elsewhere = peer.requests.filter { $0.header("Host") == "127.0.0.1:\(other.port)" }
        #expect(!elsewhere.isEmpty && elsewhere.allSatisfy { $0.method != "POST" }, "\(peer.requests)")
        #expect(elsewhere.allSatisfy { $0.header("X-Api-Key") == nil && $0.header("X-Trace") == "1" }, "\(elsewhere)")
    }

    /// The draft's 104 names another origin (a proxy on another port); after a cut, HEAD and PATCH go there
    /// without X-Api-Key, with X-Trace.
    @Test func draftUploadOnAnotherOriginGetsNoSecretHeader() async throws {
        let w = try Workspace()
        let digest = try makeRandomFile(path: w.path("src.bin"), size: 3_000_000, seed: 49)
        let peer = try await UploadPeer()
        let named = try FaultProxy(
            upstreamPort: peer.port,
            plan: [.cutAfterUpstream(bytes: 2_000_000).throttled(bytesPerSecond: 2_000_000).afterInterimResponse()])
        let other = try FaultProxy(upstreamPort: peer.port)
        defer { named.stop(); other.stop() }
        peer.advertise(origin: other.baseURL)
        let r = try await w.run([
            "upload", w.path("src.bin"), named.url(for: "u.bin"), "--interop-version", "6",
            "--retry-delay", "0.05", "-H", "X-Api-Key: s3cret", "-H", "X-Trace: 1",
        ])
        #expect(r.status == 0, "\(r)")
        #expect(try peer.storedSHA256("u.bin") == digest)
        let requests = peer.requests
        #expect(requests.map(\.method) == ["POST", "HEAD", "PATCH"], "\(requests)")
        #expect(requests.first?.header("X-Api-Key") == "s3cret")
        #expect(other.connectionCount > 0)  // HEAD and PATCH went to the other origin
        #expect(
            requests.dropFirst().allSatisfy { $0.header("X-Api-Key") == nil && $0.header("X-Trace") == "1" },
            "\(requests)")
    }
}
