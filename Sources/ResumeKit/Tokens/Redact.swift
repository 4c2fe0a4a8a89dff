import FoundationEssentials

/// Keeps passwords out of what is written down: `scheme://user:password@host` loses the password.
public enum Redact {
    public static func url(_ url: String) -> String {
        let chars = Array(url)
        guard let colon = chars.firstIndex(of: ":"), colon + 2 < chars.count, chars[colon + 1] == "/", chars[colon + 2] == "/"
        else { return url }
        let hostStart = colon + 3
        var authorityEnd = hostStart
        while authorityEnd < chars.count, !"/?#".contains(chars[authorityEnd]) { authorityEnd += 1 }
        guard let at = chars[hostStart..<authorityEnd].lastIndex(of: "@") else { return url }
        let userinfo = chars[hostStart..<at]
        guard let split = userinfo.firstIndex(of: ":") else { return url }
        return String(chars[..<split]) + ":***" + String(chars[at...])
    }

    /// Every URL in a sentence, redacted.
    public static func text(_ text: String) -> String {
        guard text.contains("@") else { return text }
        return text.split(separator: " ", omittingEmptySubsequences: false).map { url(String($0)) }.joined(separator: " ")
    }
}
