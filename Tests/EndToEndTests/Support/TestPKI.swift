import Foundation

/// A throw-away CA with a server certificate (for localhost, 127.0.0.1 and ::1) and a client certificate,
/// made with `openssl` in a temp folder; plus a second CA that signed nothing here (the "wrong CA").
public struct TestPKI: Sendable {
    public let dir: TempDirectory
    public var caCertificate: String { dir.path("ca.pem") }
    public var otherCA: String { dir.path("other-ca.pem") }
    public var serverCertificate: String { dir.path("server.pem") }
    public var serverKey: String { dir.path("server.key") }
    /// The server's public key (PEM), for `--pinnedpubkey`.
    public var serverPublicKey: String { dir.path("server-pub.pem") }
    public var clientCertificate: String { dir.path("client.pem") }
    /// The client's key, encrypted with ``clientKeyPassword``.
    public var clientKey: String { dir.path("client.key") }
    public let clientKeyPassword = "client-key-secret"

    public static func make() async throws -> TestPKI {
        let dir = try TempDirectory(prefix: "resumectl-pki")
        let pki = TestPKI(dir: dir)
        try "subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1\nextendedKeyUsage=serverAuth\n"
            .write(toFile: dir.path("server.ext"), atomically: true, encoding: .utf8)
        try "extendedKeyUsage=clientAuth\n".write(toFile: dir.path("client.ext"), atomically: true, encoding: .utf8)
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        let steps: [[String]] = [
            ["req", "-x509"] + ec + [
                "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=resumectl test CA",
            ],
            ["req", "-x509"] + ec + [
                "-keyout", "other-ca.key", "-out", "other-ca.pem", "-days", "2", "-subj", "/CN=some other CA",
            ],
            ["req"] + ec + ["-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost"],
            [
                "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out",
                "server.pem",
                "-days", "2", "-extfile", "server.ext",
            ],
            ["pkey", "-in", "server.key", "-pubout", "-out", "server-pub.pem"],
            ["req"] + ec + ["-keyout", "client-plain.key", "-out", "client.csr", "-subj", "/CN=resumectl client"],
            [
                "x509", "-req", "-in", "client.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out",
                "client.pem",
                "-days", "2", "-extfile", "client.ext",
            ],
            [
                "pkey", "-in", "client-plain.key", "-aes256", "-passout", "pass:\(pki.clientKeyPassword)", "-out",
                "client.key",
            ],
        ]
        for step in steps {
            let r = try await runProcess("openssl", step, currentDirectory: dir.path, timeout: .seconds(60))
            guard r.status == 0 else {
                throw SupportError("openssl \(step.joined(separator: " ")) failed: \(r.stderr)")
            }
        }
        return pki
    }
}
