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

    /// Whether `header` is metadata as the creation extension defines it: keys not empty, without
    /// spaces or commas, each once; a value, when there is one, in base64. The header is kept and
    /// sent back on HEAD as it came, so a malformed one is refused when the upload is created.
    static func isValid(_ header: String) -> Bool {
        var keys: Set<Substring> = []
        for pair in header.split(separator: ",", omittingEmptySubsequences: false) {
            let parts = pair.drop { $0 == " " }.split(separator: " ", omittingEmptySubsequences: true)
            guard let key = parts.first, parts.count <= 2, keys.insert(key).inserted else { return false }
            if parts.count == 2 {
                let value = parts[1]
                guard value.utf8.count % 4 == 0, Base64.decode(value) != nil else { return false }
            }
        }
        return true
    }
}
