/// tus's `Upload-Metadata`: comma-separated `key base64value` pairs (a key alone has an empty value).
enum TusMetadata {
    static func parse(_ header: String?) -> [String: String] {
        guard let header else { return [:] }
        var result: [String: String] = [:]
        for pair in header.split(separator: ",") {
            let parts = pair.split(separator: " ", omittingEmptySubsequences: true)
            guard let key = parts.first else { continue }
            let value = parts.count > 1 ? Base64.decode(parts[1]).flatMap { String(validating: $0, as: UTF8.self) } : ""
            if let value { result[String(key)] = value }
        }
        return result
    }
}
