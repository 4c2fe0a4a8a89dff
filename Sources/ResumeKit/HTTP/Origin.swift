import FoundationEssentials

/// Scheme, host and port of a URL, compared for "same origin".
enum Origin {
    static func same(_ a: String, _ b: String) -> Bool {
        guard let x = URLComponents(string: a), let y = URLComponents(string: b) else { return false }
        return x.scheme?.lowercased() == y.scheme?.lowercased() && x.host?.lowercased() == y.host?.lowercased()
            && (x.port ?? defaultPort(x.scheme)) == (y.port ?? defaultPort(y.scheme))
    }

    /// The headers a request to `url` may carry when the user named `named`: all of them at that origin;
    /// elsewhere (a tus or draft `Location`, a redirect) none that ``Redact/isSecretHeader(_:)`` marks as a
    /// credential. A server may point anywhere: what the user gave one origin is not for another.
    static func headers(_ headers: HeaderFields, for url: String, named: String) -> HeaderFields {
        same(url, named) ? headers : HeaderFields(headers.fields.filter { !Redact.isSecretHeader($0.name) })
    }

    private static func defaultPort(_ scheme: String?) -> Int { scheme?.lowercased() == "https" ? 443 : 80 }
}
