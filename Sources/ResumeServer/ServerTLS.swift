import Glibc
import NIOSSL

/// Turns `--tls-cert`/`--tls-key` into a TLS context before anything listens, so that a file that
/// cannot be read (66) or a key that does not fit the certificate (64) is one line at start, not a
/// handshake failure on every connection.
enum ServerTLS {
    static func context(_ files: TLSFiles) throws(ServeError) -> NIOSSLContext {
        for path in [files.certificateChain, files.privateKey] {
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw .unreadableFile(path: path, reason: String(cString: strerror(errno))) }
            close(fd)
        }
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMFile(files.certificateChain)
        } catch {
            throw .badTLS(reason: "\(files.certificateChain) holds no PEM certificate")
        }
        guard !chain.isEmpty else { throw .badTLS(reason: "\(files.certificateChain) holds no PEM certificate") }
        let key: NIOSSLPrivateKey
        do {
            key = try NIOSSLPrivateKey(file: files.privateKey, format: .pem)
        } catch {
            throw .badTLS(reason: "\(files.privateKey) holds no PEM private key (an encrypted key is not supported)")
        }
        // Every certificate of the file is sent: clients need the intermediates to reach their root.
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) },
            privateKey: .privateKey(key)
        )
        configuration.applicationProtocols = ["http/1.1"]
        do {
            // BoringSSL checks here that the key belongs to the first certificate.
            return try NIOSSLContext(configuration: configuration)
        } catch {
            throw .badTLS(
                reason: "the key in \(files.privateKey) does not belong to the certificate in \(files.certificateChain)"
            )
        }
    }
}
