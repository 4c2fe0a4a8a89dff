import Foundation
import Testing

/// Forward proxies (Debian's tinyproxy) by `-x` and by the environment, IPv6 loopback, and logins
/// (`-u`, `--netrc`) against nginx's `auth_basic`. One test at a time, so as not to starve the timing-sensitive
/// tests that run beside them.
@Suite(.serialized) struct NetworkOptionsTests {
    static let size = 3_000_000

    @Test(arguments: [
        (["-4", "-6"], "-4 and -6 exclude each other"),
        (["--http1.1", "--http2"], "--http1.1 and --http2 exclude each other"),
        (["--resolve", "example.com:443"], "--resolve takes HOST:PORT:ADDR"),
        (["--connect-timeout", "0"], "--connect-timeout must be more than 0 seconds"),
        (["-u", "alice"], "-u alice has no password and stdin is not a terminal"),
    ])
    func badOptionsAreOneUsageLine(args: [String], message: String) async throws {
        let w = try Workspace()
        let r = try await w.run(["download", "http://127.0.0.1:1/f.bin"] + args)
        #expect(r.status == 64, "\(r)")
        #expect(r.stderr.hasPrefix("resumectl: \(message)") && r.stderr.split(separator: "\n").count == 1, "\(r)")
    }

    @Test func downloadThroughDashXIsCutAndResumedThroughTheSameProxy() async throws {
        let w = try Workspace()
        let digest = try makeRandomFile(path: w.path("www/f.bin"), size: Self.size, seed: 41)
        let nginx = try await NginxServer(root: w.path("www"))
        let cutter = try FaultProxy(upstreamPort: nginx.port, plan: [.cutAfterDownstream(bytes: 1_000_000)])
        let proxy = try await Tinyproxy()
        let url = cutter.url(for: "f.bin")
        let cut = try await w.run(["download", url, "-x", proxy.url, "--retries", "0"])
        #expect(cut.status == 75, "\(cut)")
        let id = try #require(try w.tokens().first)
        #expect((try w.token(id)["connection"] as? [String: Any])?["proxy"] as? String == proxy.url)
        // No -x now: the token's proxy is used.
        let r = try await w.run(["resume", id])
        #expect(r.status == 0, "\(r)")
        #expect(try sha256(file: w.out + "/f.bin") == digest)
        #expect(proxy.log().components(separatedBy: "GET \(url) ").count == 3, "\(proxy.log())")
        #expect(nginx.accessLog().last?.hasPrefix("206") == true, "\(nginx.accessLog())")
    }

    @Test(arguments: [false, true])
    func downloadThroughProxyFromTheEnvironment(https: Bool) async throws {
        let w = try Workspace()
        let digest = try makeRandomFile(path: w.path("www/f.bin"), size: Self.size, seed: 42)
        let pki = try await TestPKI.make()
        let tls = https ? NginxServer.TLS(certificate: pki.serverCertificate, key: pki.serverKey) : nil
        let nginx = try await NginxServer(root: w.path("www"), tls: tls)
        let cutter = try FaultProxy(upstreamPort: nginx.port, plan: [.cutAfterDownstream(bytes: 1_000_000)])
        let proxy = try await Tinyproxy()
        let url = "\(https ? "https" : "http")://127.0.0.1:\(cutter.port)/f.bin"
        let env = [https ? "https_proxy" : "http_proxy": proxy.url, "no_proxy": "", "NO_PROXY": ""]
        let ca = https ? ["--cacert", pki.caCertificate] : []
        let cut = try await runProcess(
            resumectlBinary, ["download", url, "--retries", "0", "--state-dir", w.state] + ca,
            environment: env, currentDirectory: w.out)
        #expect(cut.status == 75, "\(cut)")
        let id = try #require(try w.tokens().first)
        // The environment is read anew on every run, never stored.
        #expect((try w.token(id)["connection"] as? [String: Any])?["proxy"] == nil)
        let r = try await runProcess(
            resumectlBinary, ["resume", id, "--state-dir", w.state], environment: env, currentDirectory: w.out)
        #expect(r.status == 0, "\(r)")
        #expect(try sha256(file: w.out + "/f.bin") == digest)
        let through = https ? "CONNECT 127.0.0.1:\(cutter.port) " : "GET \(url) "
        #expect(proxy.log().components(separatedBy: through).count == 3, "\(proxy.log())")
    }

    @Test func ipv6LoopbackDownloadAndUpload() async throws {
        let addresses = try await runProcess("ip", ["-6", "addr", "show", "dev", "lo"])
        #expect(addresses.stdout.contains("::1/128"), "this machine has no IPv6 loopback: \(addresses)")
        let w = try Workspace()
        let digest = try makeRandomFile(path: w.path("www/f.bin"), size: Self.size, seed: 43)
        let nginx = try await NginxServer(root: w.path("www"), host: "::1")
        #expect(nginx.baseURL.hasPrefix("http://[::1]:"))
        let down = try await w.run(["download", nginx.url(for: "f.bin"), "-6"])
        #expect(down.status == 0, "\(down)")
        #expect(try sha256(file: w.out + "/f.bin") == digest)
        // -4 cannot reach a server on ::1 only.
        let v4 = try await w.run(["download", nginx.url(for: "f.bin"), "-o", "no.bin", "-4", "--retries", "0"])
        #expect(v4.status != 0 && !w.exists(w.out + "/no.bin"), "\(v4)")

        // A resumable upload (with its 104) to `resumectl serve` listening on ::1 only.
        let folder = try w.dir.subdirectory("served")
        let serve = try RunningProcess(resumectlBinary, ["serve", folder, "--host", "::1", "--port", "0"])
        defer { serve.send(signal: SIGTERM) }
        let base = try await ServeProcess.listening(serve).url
        #expect(base.hasPrefix("http://[::1]:"), "\(base)")
        // Negotiated down from 8 (serve's 400 names 6 before it read the body; the retry takes a new connection).
        let up = try await w.run([
            "upload", w.out + "/f.bin", base + "/v6.bin", "-6", "--protocol", "ietf", "--stall-timeout", "5",
        ])
        #expect(up.status == 0, "\(up)")
        #expect(try sha256(file: folder + "/v6.bin") == digest)
    }

    /// nginx asking for a login, with an htpasswd line made by `openssl passwd`.
    func authNginx(_ w: Workspace) async throws -> (NginxServer, String) {
        let digest = try makeRandomFile(path: w.path("www/f.bin"), size: Self.size, seed: 44)
        let hash = try await runProcess("openssl", ["passwd", "-apr1", "s3cret-pass"])
        try "alice:\(hash.stdout.trimmingCharacters(in: .whitespacesAndNewlines))\n"
            .write(toFile: w.path("htpasswd"), atomically: true, encoding: .utf8)
        let nginx = try await NginxServer(
            root: w.path("www"),
            serverDirectives: """
                auth_basic "resumectl test"; auth_basic_user_file "\(w.path("htpasswd"))";
                """)
        return (nginx, digest)
    }

    @Test func userLoginIsUsedButNeverStored() async throws {
        let w = try Workspace()
        let (nginx, digest) = try await authNginx(w)
        let none = try await w.run(["download", nginx.url(for: "f.bin")])
        #expect(none.status == 1, "\(none)")
        #expect(none.stderr.contains("401") && none.stderr.contains("-u USER"), "\(none)")
        #expect(try !w.exists(w.out + "/f.bin.part") && w.tokens().isEmpty)

        let cutter = try FaultProxy(upstreamPort: nginx.port, plan: [.cutAfterDownstream(bytes: 1_000_000)])
        let cut = try await w.run(["download", cutter.url(for: "f.bin"), "-u", "alice:s3cret-pass", "--retries", "0"])
        #expect(cut.status == 75, "\(cut)")
        let id = try #require(try w.tokens().first)
        let raw = try String(contentsOfFile: w.state + "/tokens/\(id).json", encoding: .utf8)
        #expect(!raw.contains("s3cret") && !raw.contains("alice") && !raw.contains("Authorization"), "\(raw)")
        let again = try await w.run(["resume", id])
        #expect(again.status == 1, "\(again)")
        #expect(again.stderr.contains("401") && again.stderr.contains("never kept in the token"), "\(again)")
        #expect(try w.tokens() == [id], "a refused resume keeps the token")
        let r = try await w.run(["resume", id, "-u", "alice:s3cret-pass"])
        #expect(r.status == 0, "\(r)")
        #expect(try sha256(file: w.out + "/f.bin") == digest)
        #expect(nginx.accessLog().last?.contains("user=\"alice\"") == true, "\(nginx.accessLog())")
    }

    /// `-u` belongs to the origin the user named: not to a redirect target on another host, nor to an upload
    /// resource the server places on another origin.
    @Test func loginNeverLeavesTheOriginItWasGivenFor() async throws {
        let w = try Workspace()
        let digest = try makeRandomFile(path: w.path("www/f.bin"), size: Self.size, seed: 45)
        let hash = try await runProcess("openssl", ["passwd", "-apr1", "s3cret-pass"])
        try "alice:\(hash.stdout.trimmingCharacters(in: .whitespacesAndNewlines))\n"
            .write(toFile: w.path("htpasswd"), atomically: true, encoding: .utf8)
        // /elsewhere redirects to the same server under another name (localhost is another origin than 127.0.0.1).
        let nginx = try await NginxServer(
            root: w.path("www"),
            serverDirectives: """
                auth_basic "resumectl test"; auth_basic_user_file "\(w.path("htpasswd"))";
                location = /elsewhere { auth_basic off; return 302 http://localhost:$server_port/f.bin; }
                """)
        let same = try await w.run(["download", nginx.url(for: "f.bin"), "-u", "alice:s3cret-pass"])
        #expect(same.status == 0, "\(same)")
        #expect(try sha256(file: w.out + "/f.bin") == digest)
        let moved = try await w.run([
            "download", nginx.url(for: "elsewhere"), "-o", "moved.bin", "-u", "alice:s3cret-pass",
        ])
        #expect(moved.status == 1 && moved.stderr.contains("401"), "\(moved)")
        #expect(
            nginx.accessLog().last.map { $0.hasPrefix("401 GET /f.bin") && $0.contains("user=\"-\"") } == true,
            "\(nginx.accessLog())")

        // The upload's Location points at another origin (a pass-through proxy on another port): HEAD and PATCH
        // after the cut go there without the login; the POST to the named origin had it.
        let source = try makeRandomFile(path: w.path("src.bin"), size: Self.size, seed: 46)
        let peer = try await UploadPeer()
        let named = try FaultProxy(
            upstreamPort: peer.port,
            plan: [.cutAfterUpstream(bytes: 2_000_000).throttled(bytesPerSecond: 2_000_000).afterInterimResponse()])
        let other = try FaultProxy(upstreamPort: peer.port)
        peer.advertise(origin: other.baseURL)
        let up = try await w.run([
            "upload", w.path("src.bin"), named.url(for: "u.bin"), "-u", "alice:s3cret-pass",
            "--interop-version", "6", "--retry-delay", "0.05",
        ])
        #expect(up.status == 0, "\(up)")
        #expect(try peer.storedSHA256("u.bin") == source)
        let requests = peer.requests
        #expect(requests.map(\.method) == ["POST", "HEAD", "PATCH"], "\(requests)")
        #expect(requests.first?.header("Authorization")?.hasPrefix("Basic ") == true)
        #expect(requests.dropFirst().allSatisfy { $0.header("Authorization") == nil }, "\(requests)")
    }

    @Test func netrcOnlyWhenAsked() async throws {
        let w = try Workspace()
        let (nginx, digest) = try await authNginx(w)
        let home = try w.dir.subdirectory("home")
        try "machine 127.0.0.1 login alice password s3cret-pass\n".write(
            toFile: home + "/.netrc", atomically: true, encoding: .utf8)
        chmod(home + "/.netrc", 0o600)
        func run(_ args: [String]) async throws -> ProcessResult {
            try await runProcess(
                resumectlBinary, args + ["--state-dir", w.state], environment: ["HOME": home], currentDirectory: w.out)
        }
        // As with curl, ~/.netrc is read only with --netrc.
        let plain = try await run(["download", nginx.url(for: "f.bin")])
        #expect(plain.status == 1, "\(plain)")
        let r = try await run(["download", nginx.url(for: "f.bin"), "--netrc"])
        #expect(r.status == 0, "\(r)")
        #expect(try sha256(file: w.out + "/f.bin") == digest)
        let file = try await w.run([
            "download", nginx.url(for: "f.bin"), "-o", "g.bin", "--netrc-file", home + "/.netrc",
        ])
        #expect(file.status == 0, "\(file)")
        #expect(try sha256(file: w.out + "/g.bin") == digest)
        #expect(nginx.accessLog().suffix(2).allSatisfy { $0.contains("user=\"alice\"") }, "\(nginx.accessLog())")
    }
}
