import FoundationEssentials

/// Scheme, host and port of a URL, compared for "same origin".
enum Origin {
    static func same(_ a: String, _ b: String) -> Bool {
        guard let x = URLComponents(string: a), let y = URLComponents(string: b) else { return false }
        return x.scheme?.lowercased() == y.scheme?.lowercased() && x.host?.lowercased() == y.host?.lowercased()
            && (x.port ?? defaultPort(x.scheme)) == (y.port ?? defaultPort(y.scheme))
    }

    private static func defaultPort(_ scheme: String?) -> Int { scheme?.lowercased() == "https" ? 443 : 80 }
}
