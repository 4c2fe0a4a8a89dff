import ArgumentParser
import Glibc
import ResumeKit

/// curl's names for TLS, authentication and network options. Settings that shape the connection go to the
/// token (see `ConnectionSettings`); user names, passwords and netrc never do.
struct ConnectionOptionGroup: ParsableArguments {
    @Option(
        name: .customLong("cacert"),
        help: ArgumentHelp("Trust the CA certificates in this PEM file instead of the system's.", valueName: "file"))
    var caCert: String?

    @Option(
        name: .customLong("capath"),
        help: ArgumentHelp(
            "Trust the CA certificates in this folder (hashed names, as c_rehash makes).", valueName: "dir"))
    var caPath: String?

    @Option(
        name: .customLong("cert"),
        help: ArgumentHelp(
            "Client certificate (PEM); ':PASS' is the key's passphrase, never stored.", valueName: "file[:pass]"))
    var cert: String?

    @Option(
        name: .customLong("key"),
        help: ArgumentHelp("Private key of --cert, when it is in another file.", valueName: "file"))
    var key: String?

    @Flag(
        name: [.customShort("k"), .long],
        help: "Do not verify the server's TLS certificate (a warning on every run; kept in the token).")
    var insecure = false

    @Option(
        name: .customLong("pinnedpubkey"),
        help: ArgumentHelp(
            "Accept only this public key: a PEM/DER file or sha256//BASE64[;sha256//…].", valueName: "hashes"))
    var pinnedPublicKey: String?

    @Option(
        name: [.customShort("u"), .long],
        help: ArgumentHelp(
            "HTTP Basic login; without ':PASSWORD' it is asked on the terminal. Never stored: give it again to resume.",
            valueName: "user[:password]"))
    var user: String?

    @Flag(
        name: .customLong("netrc"),
        help: "Take the login from ~/.netrc (required). Never stored: give it again to resume.")
    var netrc = false

    @Flag(name: .customLong("netrc-optional"), help: "Take the login from ~/.netrc when it has one for the host.")
    var netrcOptional = false

    @Option(
        name: .customLong("netrc-file"),
        help: ArgumentHelp("Read this netrc file instead of ~/.netrc (implies --netrc-optional).", valueName: "file"))
    var netrcFile: String?

    @Option(
        name: [.customShort("x"), .long],
        help: ArgumentHelp(
            "Proxy URL; without it libcurl uses http_proxy, https_proxy and no_proxy. Kept without its password.",
            valueName: "url"))
    var proxy: String?

    @Option(
        name: .customLong("connect-timeout"),
        help: ArgumentHelp("Seconds to wait for a connection (default 30).", valueName: "seconds"))
    var connectTimeout: Double?

    @Flag(name: .customShort("4"), help: "Connect over IPv4 only.")
    var ipv4 = false

    @Flag(name: .customShort("6"), help: "Connect over IPv6 only.")
    var ipv6 = false

    @Option(
        name: .customLong("resolve"),
        help: ArgumentHelp("Use ADDR for HOST:PORT instead of DNS (repeatable).", valueName: "host:port:addr"))
    var resolve: [String] = []

    @Option(
        name: [.customShort("A"), .customLong("user-agent")],
        help: ArgumentHelp("User-Agent to send (default resumectl/VERSION).", valueName: "name"))
    var userAgent: String?

    @Flag(name: .customLong("http1.1"), help: "Use HTTP/1.1 only.")
    var http1_1 = false

    @Flag(
        name: .customLong("http2"),
        help: "Ask for HTTP/2, also over plain http (default: HTTP/2 over TLS when the server offers it).")
    var http2 = false

    func validate() throws {
        if ipv4 && ipv6 { throw ValidationError("-4 and -6 exclude each other") }
        if http1_1 && http2 { throw ValidationError("--http1.1 and --http2 exclude each other") }
        if netrc && netrcOptional { throw ValidationError("--netrc and --netrc-optional exclude each other") }
        if let t = connectTimeout, !(t > 0 && t.isFinite) {
            throw ValidationError("--connect-timeout must be more than 0 seconds")
        }
        for entry in resolve where entry.split(separator: ":", omittingEmptySubsequences: false).count < 3 {
            throw ValidationError("--resolve takes HOST:PORT:ADDR, not '\(entry)'")
        }
        if let proxy, proxy.isEmpty { throw ValidationError("--proxy needs a URL") }
        if let user, Self.split(user).password == nil, isatty(0) == 0 {
            throw ValidationError(
                "-u \(user) has no password and stdin is not a terminal to ask for it: give -u USER:PASSWORD")
        }
    }

    /// What the token may keep.
    var settings: ConnectionSettings {
        var s = ConnectionSettings()
        s.caCert = caCert.map(OutputPath.absolute)
        s.caPath = caPath.map(OutputPath.absolute)
        s.clientCert = cert.map { OutputPath.absolute(Self.splitCert($0).file) }
        s.clientKey = key.map(OutputPath.absolute)
        if insecure { s.insecure = true }
        s.pinnedPublicKey = pinnedPublicKey.map { $0.hasPrefix("sha256//") ? $0 : OutputPath.absolute($0) }
        s.proxy = proxy
        s.connectTimeout = connectTimeout
        s.ipVersion = ipv4 ? .v4 : ipv6 ? .v6 : nil
        s.resolve = resolve.isEmpty ? nil : resolve
        s.userAgent = userAgent
        s.httpVersion = http1_1 ? .http1_1 : http2 ? .http2 : nil
        return s
    }

    /// The secrets of this run; asks for a missing `-u` password on the terminal, without echo.
    var credentials: Credentials {
        var c = Credentials()
        if let user {
            let (name, password) = Self.split(user)
            c.user = name
            c.password = password ?? PasswordPrompt.ask("Enter host password for user '\(name)': ")
        }
        c.netrc = netrc ? .required : netrcOptional ? .optional : nil
        c.netrcFile = netrcFile.map(OutputPath.absolute)
        c.keyPassword = cert.flatMap { Self.splitCert($0).password }
        return c
    }

    /// `user:pass` → (user, pass); the password may itself contain colons, as with curl.
    static func split(_ login: String) -> (user: String, password: String?) {
        guard let colon = login.firstIndex(of: ":") else { return (login, nil) }
        return (String(login[..<colon]), String(login[login.index(after: colon)...]))
    }

    /// `file:pass` → (file, pass). As curl does, `\:` escapes a colon in the file name.
    static func splitCert(_ value: String) -> (file: String, password: String?) {
        var file = ""
        var chars = value.makeIterator()
        while let c = chars.next() {
            if c == "\\", let next = chars.next() {
                if next == ":" { file.append(":") } else { file.append(c); file.append(next) }
            } else if c == ":" {
                var rest = ""
                while let r = chars.next() { rest.append(r) }
                return (file, rest)
            } else {
                file.append(c)
            }
        }
        return (file, nil)
    }
}
