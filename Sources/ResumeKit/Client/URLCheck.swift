/// Only http and https, and a URL that has a host.
public enum URLCheck {
    public static func validate(_ url: String) throws(TransferError) {
        let bytes = url.utf8
        let head = String(decoding: bytes.prefix(8), as: UTF8.self).lowercased()
        guard head.hasPrefix("http://") || head.hasPrefix("https://") else {
            let scheme = url.split(separator: ":", maxSplits: 1).first.map(String.init) ?? url
            if url.contains("://") {
                throw TransferError(.usage, "unsupported scheme '\(scheme)': only http and https")
            }
            throw TransferError(.usage, "'\(url)' is not an http or https URL")
        }
        let rest = bytes.drop(while: { $0 != UInt8(ascii: ":") }).dropFirst(3)
        let authority = rest.prefix(while: {
            $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "?") && $0 != UInt8(ascii: "#")
        })
        guard !authority.isEmpty, !bytes.contains(where: { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\n") }) else {
            throw TransferError(.usage, "malformed URL '\(url)'")
        }
    }
}
