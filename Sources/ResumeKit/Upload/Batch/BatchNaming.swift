/// How a file's path below the batch folder becomes its target: an S3 key as it is, a URL path with every
/// byte outside RFC 3986's unreserved set percent-encoded (so spaces, `#`, `%`, `+` and non-ASCII letters
/// arrive as they are named).
enum BatchNaming {
    /// A name from the folder as text, or nil when no key or URL can carry it (not UTF-8, a control character).
    static func name(_ raw: [UInt8]) -> String? {
        guard !raw.contains(where: { $0 < 0x20 || $0 == 0x7F }) else { return nil }
        return String(validating: raw, as: UTF8.self)
    }

    /// S3 keys are at most 1,024 bytes; the same bound keeps URL paths sane.
    static func fits(_ relative: String) -> Bool { relative.utf8.count <= 1024 }

    /// Checks that `target` names a folder: `s3://BUCKET/PREFIX/` or an http(s) URL ending in `/`.
    static func checkTarget(_ target: String) throws(TransferError) {
        if Route.isS3(target) {
            let location = try S3Location.parse(target)
            guard location.isPrefix else { throw TransferError(.usage, "\(target) must end in / to take a folder") }
            return
        }
        try URLCheck.validate(target)
        guard target.hasSuffix("/"), !target.contains("?"), !target.contains("#") else {
            throw TransferError(.usage, "\(target) must end in / to take a folder")
        }
    }

    /// The target of the file at `relative`.
    static func target(_ target: String, relative: String) -> String {
        Route.isS3(target) ? target + relative : target + encoded(relative)
    }

    /// Percent-encodes all but unreserved bytes, segment by segment (`/` stays).
    static func encoded(_ relative: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        for b in relative.utf8 {
            switch b {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "/"):
                out.append(b)
            default:
                out += [UInt8(ascii: "%"), hex[Int(b >> 4)], hex[Int(b & 15)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
