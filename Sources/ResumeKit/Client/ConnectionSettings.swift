/// How connections are made: TLS trust, proxy, address family, HTTP version, user agent.
///
/// Kept in the token (``ResumeToken/connection``), so that `resume` connects the way the transfer began.
/// Nothing here is a secret: a proxy's user and password are stripped before storing, and client
/// certificate passwords and `-u` credentials live in ``Credentials``, which is never stored.
/// Every field is optional: nil means "libcurl's default", and a field given on `resume` replaces the stored one.
public struct ConnectionSettings: Codable, Sendable, Equatable {
    /// PEM file of CA certificates to trust instead of the system's (`--cacert`).
    public var caCert: String?
    /// Folder of hashed CA certificates (`--capath`).
    public var caPath: String?
    /// Client certificate file (`--cert`), PEM.
    public var clientCert: String?
    /// Private key of the client certificate (`--key`), when not inside `clientCert`.
    public var clientKey: String?
    /// TLS certificate verification off (`-k`). Stored so that a resume neither drops nor adds it silently.
    public var insecure: Bool?
    /// `sha256//BASE64` hashes or a key file (`--pinnedpubkey`).
    public var pinnedPublicKey: String?
    /// Proxy URL (`-x`), without user and password.
    public var proxy: String?
    /// Seconds to wait for a connection (`--connect-timeout`).
    public var connectTimeout: Double?
    /// Only IPv4 or only IPv6 addresses.
    public var ipVersion: IPVersion?
    /// `HOST:PORT:ADDRESS` entries that bypass DNS (`--resolve`).
    public var resolve: [String]?
    /// The `User-Agent` sent instead of resumectl's (`-A`).
    public var userAgent: String?
    /// HTTP version to ask for; nil is HTTP/2 over TLS when the server offers it, else HTTP/1.1.
    public var httpVersion: HTTPVersion?

    public enum IPVersion: String, Codable, Sendable { case v4 = "4", v6 = "6" }
    public enum HTTPVersion: String, Codable, Sendable { case http1_1 = "1.1", http2 = "2" }

    public init() {}

    public var isEmpty: Bool { self == ConnectionSettings() }

    /// These settings, with every field that `newer` sets taken from it.
    public func overridden(by newer: ConnectionSettings) -> ConnectionSettings {
        var merged = self
        if let v = newer.caCert { merged.caCert = v }
        if let v = newer.caPath { merged.caPath = v }
        if let v = newer.clientCert { merged.clientCert = v }
        if let v = newer.clientKey { merged.clientKey = v }
        if let v = newer.insecure { merged.insecure = v }
        if let v = newer.pinnedPublicKey { merged.pinnedPublicKey = v }
        if let v = newer.proxy { merged.proxy = v }
        if let v = newer.connectTimeout { merged.connectTimeout = v }
        if let v = newer.ipVersion { merged.ipVersion = v }
        if let v = newer.resolve { merged.resolve = v }
        if let v = newer.userAgent { merged.userAgent = v }
        if let v = newer.httpVersion { merged.httpVersion = v }
        return merged
    }

    /// What may enter a token: the proxy URL loses its user and password.
    public var storable: ConnectionSettings {
        var copy = self
        copy.proxy = proxy.map(Self.withoutUserInfo)
        return copy
    }

    /// `http://user:pass@proxy:3128` → `http://proxy:3128`.
    static func withoutUserInfo(_ url: String) -> String {
        let schemeEnd = url.firstRange(of: "://").map { $0.upperBound } ?? url.startIndex
        let authorityEnd = url[schemeEnd...].firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? url.endIndex
        guard let at = url[schemeEnd..<authorityEnd].lastIndex(of: "@") else { return url }
        return String(url[..<schemeEnd]) + String(url[url.index(after: at)...])
    }
}
