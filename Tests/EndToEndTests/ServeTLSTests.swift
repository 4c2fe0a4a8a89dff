import Foundation
import ResumeServer
import Testing

/// `resumectl serve --tls-cert --tls-key`: HTTPS for curl and the built `resumectl` (both trusting
/// the test CA with `--cacert`), the whole chain sent, and a bad key or file refused before listening.
@Suite("serve over TLS")
struct ServeTLSTests {
    @Test("curl over HTTPS: ranged GET, upload, and the chain in the certificate file is sent")
    func curlOverHTTPS() async throws {
        let pki = try await TestPKI.make()
        let w = try Workspace()
        let digest = try makeRandomFile(path: w.path("www/up.bin"), size: 3_000_000, seed: 8)
        // The server's certificate followed by its CA: both must reach the client.
        let chain = w.path("chain.pem")
        try
            (String(contentsOfFile: pki.serverCertificate, encoding: .utf8)
            + String(contentsOfFile: pki.caCertificate, encoding: .utf8))
            .write(toFile: chain, atomically: true, encoding: .utf8)
        try await InProcessServe.with({ $0.tls = TLSFiles(certificateChain: chain, privateKey: pki.serverKey) }) {
            served in
            #expect(served.url.hasPrefix("https://127.0.0.1:"))
            let put = try await CurlExchange.run([
                "--cacert", pki.caCertificate, "-T", w.path("www/up.bin"), served.url + "/up.bin",
            ])
            #expect(put.status == 201, "\(put.stderr)")
            #expect(try sha256(file: served.path("up.bin")) == digest)

            let full = try await CurlExchange.run(["--cacert", pki.caCertificate, served.url + "/up.bin"])
            #expect(full.status == 200)
            #expect(sha256(full.body) == digest)
            let part = try await CurlExchange.run([
                "--cacert", pki.caCertificate, "-r", "1000000-", served.url + "/up.bin",
            ])
            #expect(part.status == 206)
            #expect(part["content-range"] == "bytes 1000000-2999999/3000000")
            let original = try Data(contentsOf: URL(fileURLWithPath: w.path("www/up.bin")))
            #expect(part.body == original[1_000_000...])

            let untrusted = try await CurlExchange.run([served.url + "/up.bin"])
            #expect(untrusted.exit == 60, "no --cacert: the certificate is not trusted")

            let showCerts = try await runProcess(
                "openssl",
                ["s_client", "-connect", "127.0.0.1:\(served.port)", "-showcerts", "-CAfile", pki.caCertificate],
                stdin: Data(), timeout: .seconds(30))
            #expect(
                showCerts.stdout.components(separatedBy: "-----BEGIN CERTIFICATE-----").count - 1 == 2,
                "\(showCerts.stdout)")
            #expect(showCerts.stdout.contains("Verify return code: 0"))
        }
    }

    @Test("resumectl downloads and uploads (IETF draft) over HTTPS with --cacert")
    func resumectlOverHTTPS() async throws {
        let pki = try await TestPKI.make()
        let w = try Workspace()
        let digest = try makeRandomFile(path: w.path("www/src.bin"), size: 3_000_000, seed: 9)
        try await InProcessServe.with({
            $0.tls = TLSFiles(certificateChain: pki.serverCertificate, privateKey: pki.serverKey)
        }) { served in
            let up = try await w.run([
                "upload", w.path("www/src.bin"), served.url + "/in/src.bin", "--cacert", pki.caCertificate,
            ])
            #expect(up.status == 0, "\(up)")
            #expect(try sha256(file: served.path("in/src.bin")) == digest)
            #expect(served.log.contains { $0.hasPrefix("POST /in/src.bin 201") }, "\(served.log)")

            let down = try await w.run([
                "download", served.url + "/in/src.bin", "-o", w.path("out/back.bin"), "--cacert", pki.caCertificate,
            ])
            #expect(down.status == 0, "\(down)")
            #expect(try sha256(file: w.path("out/back.bin")) == digest)
        }
    }

    @Test("serve refuses to start with a key that is not the certificate's (64) or a file it cannot read (66)")
    func badFilesRefusedAtStart() async throws {
        let pki = try await TestPKI.make()
        let w = try Workspace()
        let mismatched = try await runProcess(
            resumectlBinary,
            [
                "serve", w.path("www"), "--port", "0", "--tls-cert", pki.serverCertificate, "--tls-key",
                pki.dir.path("ca.key"),
            ])
        #expect(mismatched.status == 64, "\(mismatched)")
        #expect(
            mismatched.stderr.split(separator: "\n").count == 1 && mismatched.stderr.contains("does not belong"),
            "\(mismatched.stderr)")
        #expect(!mismatched.stdout.contains("listening"))

        let missing = try await runProcess(
            resumectlBinary,
            ["serve", w.path("www"), "--port", "0", "--tls-cert", w.path("nothing.pem"), "--tls-key", pki.serverKey])
        #expect(missing.status == 66, "\(missing)")
        #expect(
            missing.stderr.split(separator: "\n").count == 1 && missing.stderr.contains("nothing.pem"),
            "\(missing.stderr)")

        let notPEM = try await runProcess(
            resumectlBinary,
            [
                "serve", w.path("www"), "--port", "0", "--tls-cert", pki.serverCertificate, "--tls-key",
                pki.serverCertificate,
            ])
        #expect(notPEM.status == 64, "\(notPEM)")

        let serve = try RunningProcess(
            resumectlBinary,
            ["serve", w.path("www"), "--port", "0", "--tls-cert", pki.serverCertificate, "--tls-key", pki.serverKey])
        defer { serve.send(signal: SIGTERM) }
        let url = try await ServeProcess.listening(serve).url
        #expect(url.hasPrefix("https://127.0.0.1:"), "\(url)")
    }
}
