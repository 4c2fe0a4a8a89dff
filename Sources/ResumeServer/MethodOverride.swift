/// The one method a request is handled as: the login gate and every handler read the request head's method
/// after ``ExchangeObserver`` has applied this rule to it, so none of them can take a request for another.
///
/// tus 1.0.0 core says `X-HTTP-Method-Override` "MUST be interpreted as the request's method" (for clients
/// whose proxies pass GET and POST only). It is honoured only where tus needs it: on a tus request (one that
/// carries `Tus-Resumable`) naming a method tus defines, or as `OPTIONS` (tus's discovery, which needs no
/// `Tus-Resumable` and never writes). Anywhere else the header is ignored and the request line's method
/// stands. Pure and free of NIO, so the fuzzer compiles it alone.
enum MethodOverride {
    static let headerName = "x-http-method-override"
    /// The methods tus requests use.
    static let tusMethods: Set<String> = ["OPTIONS", "POST", "HEAD", "PATCH", "DELETE"]

    /// The method to handle the request as: `requestMethod` (the request line's) unless `override` (the
    /// header's value) is honoured by the rule above. `isTus`: the request carries `Tus-Resumable`.
    static func effective(requestMethod: String, override: String?, isTus: Bool) -> String {
        guard let override else { return requestMethod }
        var value = Substring(override)
        while let c = value.first, c == " " || c == "\t" { value.removeFirst() }
        while let c = value.last, c == " " || c == "\t" { value.removeLast() }
        // ASCII only: `uppercased()` maps a few other letters onto ASCII ones ("ı" → "I").
        guard value.utf8.allSatisfy({ $0 < 0x80 }) else { return requestMethod }
        let method = value.uppercased()
        guard method == "OPTIONS" || (isTus && tusMethods.contains(method)) else { return requestMethod }
        return method
    }
}
