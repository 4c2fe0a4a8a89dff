import Foundation
import Testing

/// HTTPS and HTTP/2 against nginx with certificates made by `openssl` for each test: resume after a cut,
/// `--connections`, a wrong CA, `-k`, client certificates, pinned keys, and an upload through nginx's TLS proxy.
/// One test at a time: each starts nginx, openssl and TLS clients, and the suite shares two cores with the rest.
@Suite(.serialized) struct TLSTests {
    static let size = 5_000_000  // five segments of at least 1 MiB: --connections 4 gets its four

    func tlsNginx(
        _ w: Workspace, _ pki: TestPKI, http2: Bool = false, clientCA: String? = nil, limitRate: Int? = nil,
        serverDirectives: String = ""
    ) async throws -> (NginxServer, String) {
        let digest = try makeRandomFile(path: w.path("www/f.bin"), size: Self.size, seed: 31)
        let tls = NginxServer.TLS(
            certificate: pki.serverCertificate, key: pki.serverKey, http2: http2, clientCA: clientCA)
        return (
            try await NginxServer(
                root: w.path("www"), limitRate: limitRate, serverDirectives: serverDirectives, tls: tls), digest
        )
    }

    @Test func httpsDownloadCutMidwayIsResumed() async throws {
        let w = try Workspace()
        let pki = try await TestPKI.make()
        let (nginx, digest) = try await tlsNginx(w, pki)
        // The cut is of the TCP stream under TLS: the client sees a connection dropped inside a record.
        let proxy = try FaultProxy(upstreamPort: nginx.port, plan: [.cutAfterDownstream(bytes: 1_000_000)])
        let url = "https://127.0.0.1:\(proxy.port)/f.bin"
        let r = try await w.run(["download", url, "--cacert", pki.caCertificate, "--json", "--retry-delay", "0.05"])
        #expect(r.status == 0, "\(r)")
        #expect(try sha256(file: w.out + "/f.bin") == digest)
        #expect(names(events(r.stdout)).filter { $0 == "retry" }.count == 1)
        let log = nginx.accessLog()
        #expect(log.count == 2 && log[1].hasPrefix("206") && log[1].contains("if_range=\"\\x22"), "\(log)")
    }

    @Test func httpsWithFourConnections() async throws {
        let w = try Workspace()
        let pki = try await TestPKI.make()
        let (nginx, digest) = try await tlsNginx(w, pki)
        let r = try await w.run([
            "download", nginx.url(for: "f.bin"), "--cacert", pki.caCertificate, "--connections", "4",
        ])
        #expect(r.status == 0, "\(r)")
        #expect(try sha256(file: w.out + "/f.bin") == digest)
        #expect(nginx.accessLog().filter { $0.hasPrefix("206") }.count >= 4, "\(nginx.accessLog())")
    }

    @Test func http2IsUsedResumedAndSegmented() async throws {
        let w = try Workspace()
        let pki = try await TestPKI.make()
        let (nginx, digest) = try await tlsNginx(w, pki, http2: true, limitRate: 1_000_000)
        let p = try w.start([
            "download", nginx.url(for: "f.bin"), "--cacert", pki.caCertificate, "-A", "probe/1.0", "--json",
        ])
        _ = try await p.waitForLine { $0.contains("\"progress\"") && !$0.contains("\"bytes\":0,") }
        p.send(signal: SIGTERM)
        #expect(try await p.wait().status == 75)
        let id = try #require(try w.tokens().first)
        let connection = try #require(try w.token(id)["connection"] as? [String: Any])
        #expect(connection["caCert"] as? String == pki.caCertificate)
        #expect(connection["userAgent"] as? String == "probe/1.0")
        // No --cacert now: the token's CA is used, and its user agent.
        let r = try await w.run(["resume", id])
        #expect(r.status == 0, "\(r)")
        #expect(try sha256(file: w.out + "/f.bin") == digest)
        let log = nginx.accessLog()
        #expect(
            log.count == 2 && log.allSatisfy { $0.contains("HTTP/2.0") && $0.contains("ua=\"probe/1.0\"") }, "\(log)")
        #expect(log.last?.hasPrefix("206") == true)

        let four = try await w.run([
            "download", nginx.url(for: "f.bin"), "-o", "four.bin", "--cacert", pki.caCertificate,
            "--connections", "4",
        ])
        #expect(four.status == 0, "\(four)")
        #expect(try sha256(file: w.out + "/four.bin") == digest)
        let segmented = nginx.accessLog().dropFirst(2)
        #expect(
            segmented.filter { $0.hasPrefix("206") }.count >= 4 && segmented.allSatisfy { $0.contains("HTTP/2.0") },
            "\(segmented)")
        // Four connections, not four streams on one: a per-connection limit is what --connections beats.
        let connections = Set(
            segmented.filter { $0.hasPrefix("206") }.compactMap { $0.components(separatedBy: " conn=").last })
        #expect(connections.count >= 4, "\(segmented)")

        let old = try await w.run([
            "download", nginx.url(for: "f.bin"), "-o", "h1.bin", "--cacert", pki.caCertificate, "--http1.1",
        ])
        #expect(old.status == 0, "\(old)")
        #expect(nginx.accessLog().last?.contains("HTTP/1.1") == true, "\(nginx.accessLog())")
    }

    @Test func wrongCAFailsWithNothingWrittenAndCacertFixesIt() async throws {
        let w = try Workspace()
        let pki = try await TestPKI.make()
        let (nginx, digest) = try await tlsNginx(w, pki)
        for wrong in [[], ["--cacert", pki.otherCA]] {
            let r = try await w.run(["download", nginx.url(for: "f.bin")] + wrong)
            #expect(r.status == 1, "\(r)")
            #expect(
                r.stderr.hasPrefix("resumectl: TLS: ") && r.stderr.contains("certificate")
                    && r.stderr.contains("--cacert"), "\(r)")
            #expect(r.stderr.split(separator: "\n").count == 1, "\(r)")
            #expect(!w.exists(w.out + "/f.bin") && !w.exists(w.out + "/f.bin.part"))
            #expect(try w.tokens().isEmpty)
        }
        #expect(nginx.accessLog().isEmpty)
        let r = try await w.run(["download", nginx.url(for: "f.bin"), "--cacert", pki.caCertificate])
        #expect(r.status == 0, "\(r)")
        #expect(try sha256(file: w.out + "/f.bin") == digest)
    }

    @Test func insecureWarnsEveryRunAndIsKeptForResume() async throws {
        let w = try Workspace()
        let pki = try await TestPKI.make()
        let (nginx, digest) = try await tlsNginx(w, pki)
        let proxy = try FaultProxy(upstreamPort: nginx.port, plan: [.cutAfterDownstream(bytes: 1_000_000)])
        let cut = try await w.run(["download", "https://127.0.0.1:\(proxy.port)/f.bin", "-k", "-q", "--retries", "0"])
        #expect(cut.status == 75, "\(cut)")
        let warning = "resumectl: warning: TLS certificates are not verified"
        #expect(cut.stderr.components(separatedBy: warning).count == 2, "\(cut)")
        let id = try #require(try w.tokens().first)
        #expect((try w.token(id)["connection"] as? [String: Any])?["insecure"] as? Bool == true)
        // Not given again, still in force, and said again.
        let r = try await w.run(["resume", id])
        #expect(r.status == 0, "\(r)")
        #expect(r.stderr.components(separatedBy: warning).count == 2, "\(r)")
        #expect(try sha256(file: w.out + "/f.bin") == digest)
    }

    @Test func clientCertificateRequiredAndGiven() async throws {
        let w = try Workspace()
        let pki = try await TestPKI.make()
        let (nginx, digest) = try await tlsNginx(w, pki, clientCA: pki.caCertificate)
        let refused = try await w.run(["download", nginx.url(for: "f.bin"), "--cacert", pki.caCertificate])
        #expect(refused.status == 1, "\(refused)")
        #expect(!w.exists(w.out + "/f.bin"))

        let proxy = try FaultProxy(upstreamPort: nginx.port, plan: [.cutAfterDownstream(bytes: 1_000_000)])
        let cert = [
            "--cacert", pki.caCertificate, "--cert", "\(pki.clientCertificate):\(pki.clientKeyPassword)", "--key",
            pki.clientKey,
        ]
        let cut = try await w.run(["download", "https://127.0.0.1:\(proxy.port)/f.bin"] + cert + ["--retries", "0"])
        #expect(cut.status == 75, "\(cut)")
        let id = try #require(try w.tokens().first)
        let raw = try String(contentsOfFile: w.state + "/tokens/\(id).json", encoding: .utf8)
        #expect(!raw.contains(pki.clientKeyPassword), "\(raw)")
        #expect(raw.contains("client.pem") && raw.contains("client.key"), "\(raw)")
        // The key's passphrase is needed again; the certificate and key paths come from the token.
        let r = try await w.run(["resume", id, "--cert", "\(pki.clientCertificate):\(pki.clientKeyPassword)"])
        #expect(r.status == 0, "\(r)")
        #expect(try sha256(file: w.out + "/f.bin") == digest)
    }

    @Test func pinnedPublicKey() async throws {
        let w = try Workspace()
        let pki = try await TestPKI.make()
        let (nginx, digest) = try await tlsNginx(w, pki)
        let wrong = try await w.run([
            "download", nginx.url(for: "f.bin"), "--cacert", pki.caCertificate,
            "--pinnedpubkey", "sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
        ])
        #expect(wrong.status == 1, "\(wrong)")
        #expect(wrong.stderr.contains("TLS:") && wrong.stderr.lowercased().contains("public key"), "\(wrong)")
        #expect(!w.exists(w.out + "/f.bin.part"))
        let right = try await w.run([
            "download", nginx.url(for: "f.bin"), "--cacert", pki.caCertificate, "--pinnedpubkey", pki.serverPublicKey,
        ])
        #expect(right.status == 0, "\(right)")
        #expect(try sha256(file: w.out + "/f.bin") == digest)
    }

    /// nginx terminates TLS (and HTTP/2) in front of the upload peer in plain mode. Plain, because nginx
    /// 1.22 takes a `104` for the final response and drops the real one, so no draft peer works behind it.
    @Test(arguments: [false, true])
    func uploadThroughTLSProxy(http2: Bool) async throws {
        let w = try Workspace()
        let pki = try await TestPKI.make()
        let digest = try makeRandomFile(path: w.path("src.bin"), size: Self.size, seed: 32)
        let peer = try await UploadPeer(plainMode: true)
        let tls = NginxServer.TLS(certificate: pki.serverCertificate, key: pki.serverKey, http2: http2)
        let nginx = try await NginxServer(
            root: w.path("www"),
            serverDirectives: """
                client_max_body_size 0;
                location / { proxy_pass http://127.0.0.1:\(peer.port); proxy_http_version 1.1; \
                proxy_request_buffering off; }
                """, tls: tls)
        let r = try await w.run(["upload", w.path("src.bin"), nginx.url(for: "up.bin"), "--cacert", pki.caCertificate])
        #expect(r.status == 0, "\(r)")
        #expect(try peer.storedSHA256("up.bin") == digest)
        #expect(nginx.accessLog().contains { $0.contains(http2 ? "HTTP/2.0" : "HTTP/1.1") }, "\(nginx.accessLog())")
        #expect(try w.tokens().isEmpty)
    }
}
