/// The arithmetic of a multipart upload: part sizes within S3's limits, which parts a resume may trust,
/// the CompleteMultipartUpload body and the ETag S3 must answer with. Pure.
public enum MultipartPlan {
    public static let defaultPartSize: Int64 = 8 << 20
    public static let minimumPartSize: Int64 = 5 << 20
    public static let maximumPartSize: Int64 = 5 << 30
    public static let maximumParts: Int64 = 10_000

    /// The part size for a file: `requested` (default 8 MiB) raised, in whole MiB, until the file fits in
    /// 10,000 parts. `raised` says the user's choice was changed (the CLI says so once).
    public static func partSize(fileSize: Int64, requested: Int64?) throws(TransferError) -> (size: Int64, raised: Bool)
    {
        let wanted = requested ?? defaultPartSize
        guard (minimumPartSize...maximumPartSize).contains(wanted) else {
            throw TransferError(.usage, "--part-size must be between 5 MiB and 5 GiB")
        }
        let mib: Int64 = 1 << 20
        let needed = (fileSize + maximumParts - 1) / maximumParts
        guard needed > wanted else { return (wanted, false) }
        let size = (needed + mib - 1) / mib * mib
        guard size <= maximumPartSize else {
            throw TransferError(
                .failed, "a file of \(fileSize) bytes is larger than S3's limit of 10,000 parts of 5 GiB")
        }
        return (size, true)
    }

    /// How many parts a file of `fileSize` bytes takes (an empty file is one empty part).
    public static func partCount(fileSize: Int64, partSize: Int64) -> Int {
        max(1, Int((fileSize + partSize - 1) / partSize))
    }

    /// The byte range of part `number` (1-based).
    public static func range(ofPart number: Int, fileSize: Int64, partSize: Int64) -> Range<Int64> {
        let start = Int64(number - 1) * partSize
        return start..<min(fileSize, start + partSize)
    }

    /// The parts a resume keeps: those S3 lists with the very size, and the ETag our MD5 of the part gives
    /// (a part sent with `Content-MD5`) or the ETag S3 answered when it took the part (any other).
    /// Anything else (a part S3 lost, or one whose bytes differ) is sent again.
    public static func trusted(recorded: [S3Part], listed: [ListedPart]) -> [S3Part] {
        let byNumber = Dictionary(listed.map { ($0.number, $0) }, uniquingKeysWith: { _, last in last })
        return recorded.filter { part in
            guard let seen = byNumber[part.number], seen.size == part.size else { return false }
            let listed = unquoted(seen.etag).lowercased()
            return listed == (part.md5 ?? unquoted(part.etag).lowercased())
        }
    }

    /// Part numbers still to send, in ascending order.
    public static func missing(partCount: Int, done: [S3Part]) -> [Int] {
        let have = Set(done.map(\.number))
        return (1...partCount).filter { !have.contains($0) }
    }

    /// The CompleteMultipartUpload body, parts in ascending order; with a flexible checksum (`CRC32C`),
    /// each part's as S3 requires when the upload was created with one.
    public static func completionBody(_ parts: [S3Part], checksum flexibleName: String? = nil) -> String {
        var xml = "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        for part in parts.sorted(by: { $0.number < $1.number }) {
            xml += "<Part><PartNumber>\(part.number)</PartNumber><ETag>\(escaped(part.etag))</ETag>"
            if let name = flexibleName, let value = part.checksum {
                xml += "<Checksum\(name)>\(escaped(value))</Checksum\(name)>"
            }
            xml += "</Part>"
        }
        return xml + "</CompleteMultipartUpload>"
    }

    /// The ETag S3 gives a completed multipart object: MD5 of the parts' binary MD5s, then `-N`. A part's
    /// MD5 is ours when it went with `Content-MD5`, else the ETag S3 answered for it (S3's part ETags are
    /// their MD5s unless the object is encrypted with KMS); nil when a part has neither, so nothing can be checked.
    public static func expectedETag(_ parts: [S3Part]) -> String? {
        var md5s: [UInt8] = []
        for part in parts.sorted(by: { $0.number < $1.number }) {
            let hex = part.md5 ?? unquoted(part.etag).lowercased()
            let digits = Array(hex)
            guard digits.count == 32, digits.allSatisfy(\.isHexDigit) else { return nil }
            md5s += stride(from: 0, to: 32, by: 2).compactMap { UInt8(String(digits[$0...$0 + 1]), radix: 16) }
        }
        return "\"" + MessageDigest.hash(.md5, md5s).hex + "-\(parts.count)\""
    }

    static func unquoted(_ etag: String) -> String {
        etag.count >= 2 && etag.hasPrefix("\"") && etag.hasSuffix("\"") ? String(etag.dropFirst().dropLast()) : etag
    }

    static func escaped(_ text: String) -> String {
        text.replacing("&", with: "&amp;").replacing("<", with: "&lt;").replacing(">", with: "&gt;").replacing(
            "\"", with: "&quot;")
    }
}
