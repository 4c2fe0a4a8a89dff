/// The percent-encoding AWS requires in canonical requests (RFC 3986 unreserved characters stay, every other
/// byte becomes `%XX` with upper-case hex), on bytes, so that keys in any script sign the way S3 checks them.
public enum S3Encoding {
    /// One query name or value, or a path segment: `/` is encoded too.
    public static func component(_ text: String) -> String {
        encode(text, keepSlash: false)
    }

    /// An object key as a URI path: each segment encoded, the slashes between them kept.
    public static func path(_ key: String) -> String {
        encode(key, keepSlash: true)
    }

    /// `name=value` pairs sorted by encoded name, then value, joined by `&`; a valueless parameter is `name=`.
    public static func canonicalQuery(_ query: [(String, String)]) -> String {
        query.map { (component($0.0), component($0.1)) }
            .sorted { $0.0 == $1.0 ? $0.1 < $1.1 : $0.0 < $1.0 }
            .map { "\($0.0)=\($0.1)" }
            .joined(separator: "&")
    }

    private static func encode(_ text: String, keepSlash: Bool) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"):
                out.append(byte)
            case UInt8(ascii: "/") where keepSlash:
                out.append(byte)
            default:
                out.append(UInt8(ascii: "%"))
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0x0f)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
