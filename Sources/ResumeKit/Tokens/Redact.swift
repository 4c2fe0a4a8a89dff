import FoundationEssentials

/// The one rule of what of a request may be written down (a token, a record, `list`, a `-v` trace):
/// - A URL keeps its user name, never its password: a resume asks for the password again (`-u`, the
///   terminal) or takes it from netrc.
/// - A header is kept whole unless its name marks a credential (``isSecretHeader(_:)``): such a header is
///   kept by name only, and a resume without it says which header to give again.
public enum Redact {
    /// `scheme://user:password@host/…` → `scheme://user@host/…`; any other URL as it is.
    public static func url(_ url: String) -> String {
        guard let login = login(in: url), login.password != nil else { return url }
        return login.url
    }

    /// The login a URL carries (`scheme://user[:password]@host/…`): the URL without its password, and the
    /// user name and password percent-decoded, as libcurl sends them. nil when the URL names no user.
    public static func login(in url: String) -> (url: String, user: String, password: String?)? {
        let chars = Array(url)
        guard let colon = chars.firstIndex(of: ":"), colon + 2 < chars.count, chars[colon + 1] == "/",
            chars[colon + 2] == "/"
        else { return nil }
        let hostStart = colon + 3
        var authorityEnd = hostStart
        while authorityEnd < chars.count, !"/?#".contains(chars[authorityEnd]) { authorityEnd += 1 }
        guard let at = chars[hostStart..<authorityEnd].lastIndex(of: "@") else { return nil }
        let userinfo = chars[hostStart..<at]
        guard let split = userinfo.firstIndex(of: ":") else {
            return (url, OutputPath.percentDecoded(String(userinfo)), nil)
        }
        return (
            String(chars[..<split]) + String(chars[at...]), OutputPath.percentDecoded(String(chars[hostStart..<split])),
            OutputPath.percentDecoded(String(chars[(split + 1)..<at]))
        )
    }

    /// Every URL in a sentence, redacted.
    public static func text(_ text: String) -> String {
        guard text.contains("@") else { return text }
        return text.split(separator: " ", omittingEmptySubsequences: false).map { url(String($0)) }.joined(
            separator: " ")
    }

    /// Words that mark a header's name as a credential (case-insensitive, anywhere in the name):
    /// `Authorization`, `Proxy-Authorization`, `Cookie`, `X-Api-Key`, `X-Auth-Token`, `X-Session-Id` ….
    public static let secretHeaderWords = ["token", "key", "secret", "auth", "session", "password", "cookie"]

    /// True when a header's value is a credential: it is never written down.
    public static func isSecretHeader(_ name: some StringProtocol) -> Bool {
        let lower = name.lowercased()
        return secretHeaderWords.contains { lower.contains($0) }
    }

    /// The name of a `Name: value` line, as given (without surrounding spaces).
    public static func headerName(_ line: String) -> String {
        String(line.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).first?.trimmingSpaces() ?? "")
    }

    /// The lines whose values may be written down.
    public static func storableHeaders(_ lines: [String]) -> [String] {
        lines.filter { !isSecretHeader(headerName($0)) }
    }

    /// The names of the lines kept by name only, each once (the first spelling), in order.
    public static func withheldHeaderNames(_ lines: [String], adding earlier: [String] = []) -> [String] {
        var names = earlier
        for line in lines {
            let name = headerName(line)
            guard isSecretHeader(name), !names.contains(where: { $0.lowercased() == name.lowercased() }) else {
                continue
            }
            names.append(name)
        }
        return names
    }
}
