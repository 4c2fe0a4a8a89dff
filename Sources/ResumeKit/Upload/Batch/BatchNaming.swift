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
        let isFolder: Bool
        if Route.isS3(target) {
            isFolder = try S3Location.parse(target).isPrefix
        } else {
            try URLCheck.validate(target)
            isFolder = target.hasSuffix("/") && !target.contains("?") && !target.contains("#")
        }
        guard isFolder else { throw TransferError(.usage, "\(target) must end in / to take a folder") }
    }

    /// The target of the file at `relative`: on S3 as it is, else each segment percent-encoded.
    static func target(_ target: String, relative: String) -> String {
        if Route.isS3(target) { return target + relative }
        return target
            + relative.split(separator: "/", omittingEmptySubsequences: false).map {
                FolderListing.percentEncoded(String($0))
            }
            .joined(separator: "/")
    }
}
