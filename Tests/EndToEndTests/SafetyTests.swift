import Foundation
import Testing

/// Credentials go only to the origin the user named; redirects are followed, but the token keeps the
/// URL the user gave.
@Suite struct SafetyTests {
    @Test func redirectIsFollowedWithoutCredentialsAndTheTokenKeepsTheGivenURL() async throws {
        let w = try Workspace()
        let content = randomBytes(count: 2_000_000, seed: 41)
        let target = try await MisbehavingServer(content: content, behaviors: [.cutsEveryResponse(afterBytes: 800_000)])
        let nginx = try await NginxServer(root: w.path("www"),
            serverDirectives: "location = /redir { return 302 \(target.url(for: "file.bin")); }")
        let r = try await w.run(["download", nginx.url(for: "redir"), "-o", "r.bin", "--retries", "0",
            "-H", "Authorization: Bearer secret-token", "-H", "Cookie: session=abc", "-H", "X-Trace: 7"])
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
        let resumed = try await w.run(["resume", id, "-H", "Authorization: Bearer secret-token", "--retry-delay", "0.01"])
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
        let proxy = try FaultProxy(upstreamPort: peer.port, plan: [.cutAfterUpstream(bytes: 2_000_000).throttled(bytesPerSecond: 2_000_000)])
        let r = try await w.run(["upload", w.path("www/src.bin"), proxy.url(for: "o.bin"), "--interop-version", "6",
            "--retry-delay", "0.05", "-H", "Authorization: Bearer secret-token"])
        #expect(r.status == 0, "\(r)")
        #expect(try peer.storedSHA256("o.bin") == digest)
        let post = try #require(peer.requests.first { $0.method == "POST" })
        #expect(post.header("Authorization") == "Bearer secret-token")
        let others = peer.requests.filter { $0.method != "POST" }
        #expect(!others.isEmpty && others.allSatisfy { $0.header("Authorization") == nil }, "\(others)")
    }
}
