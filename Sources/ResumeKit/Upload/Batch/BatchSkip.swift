import FoundationEssentials
import Glibc

/// `--skip-existing`: does the target already hold these bytes? Decided from one HEAD and never from the
/// size alone: S3's `x-amz-checksum-crc32c` (asked for with `x-amz-checksum-mode`) or a single-part
/// object's MD5 ETag; elsewhere RFC 9530's `Repr-Digest` (sha-256 or sha-512) or RFC 3230's `Digest`.
/// Anything else (no object, another size, no checksum to compare) means: send the file.
enum BatchSkip {
    /// What a HEAD answered that can prove a copy: pure, so the rules are tested without a server. Any one
    /// checksum that matches is proof; a multipart object's (a composite CRC32C, an ETag of part MD5s,
    /// both `…-N`) is computed over parts of `partSize`, the size this upload would use.
    static func same(
        _ head: ResponseHead, size: Int64, partSize: Int64,
        digest: (DigestAlgorithm, BodyRange) throws(TransferError) -> [UInt8]
    ) throws(TransferError) -> Bool {
        guard (200..<300).contains(head.status),
            let length = head.headers["Content-Length"].flatMap({ Int64($0.trimmingSpaces()) }),
            length == size
        else { return false }
        let h = head.headers
        let whole = BodyRange(offset: 0, length: size)
        let parts = stride(from: Int64(0), to: max(size, 1), by: Int(partSize)).map {
            BodyRange(offset: $0, length: min(partSize, size - $0))
        }
        func base64(_ bytes: [UInt8]) -> String { Data(bytes).base64EncodedString() }
        /// The digests of the parts, combined: CRCs as S3's composite checksum, MD5s as S3's multipart ETag.
        func combined(_ algorithm: DigestAlgorithm) throws(TransferError) -> [UInt8] {
            var all: [UInt8] = []
            for part in parts { all += try digest(algorithm, part) }
            return algorithm.digest(all)
        }
        if let crc = h["x-amz-checksum-crc32c"]?.trimmingSpaces() {
            let pieces = crc.split(separator: "-", maxSplits: 1)
            let value = String(pieces.first ?? "")
            let count = pieces.count > 1 ? Int(pieces[1]) : nil
            if count == nil, value == base64(try digest(.crc32c, whole)) { return true }
            if parts.count > 1, count == nil || count == parts.count, value == base64(try combined(.crc32c)) {
                return true
            }
        }
        let repr = StructuredField.byteSequenceDictionary(h["Repr-Digest"])
        let members = (h["Digest"] ?? "").split(separator: ",").map { $0.split(separator: "=", maxSplits: 1) }
        for (name, algorithm) in [("sha-256", DigestAlgorithm.sha256), ("sha-512", .sha512)] {
            let listed = members.filter { $0.count == 2 && $0[0].trimmingSpaces().lowercased() == name }
                .map { $0[1].trimmingSpaces() }
            guard repr[name] != nil || !listed.isEmpty else { continue }
            let sum = try digest(algorithm, whole)
            if repr[name] == sum || listed.contains(base64(sum)) { return true }
        }
        // An ETag is an MD5 on S3 only (a single PUT's, or `MD5(part MD5s)-N` of a multipart upload).
        if h["x-amz-request-id"] != nil || h["x-amz-id-2"] != nil || h["x-amzn-requestid"] != nil, let etag = h["ETag"]
        {
            let tag = etag.trimmingSpaces().filter { $0 != "\"" }.lowercased()
            let pieces = tag.split(separator: "-", maxSplits: 1)
            if pieces.count == 1, tag.count == 32, tag == (try digest(.md5, whole)).hex { return true }
            if pieces.count == 2, Int(pieces[1]) == parts.count, String(pieces[0]) == (try combined(.md5)).hex {
                return true
            }
        }
        return false
    }

    /// One HEAD of `url` (signed by `settings` for S3), then ``same(_:size:digest:)`` over the file.
    static func check(
        _ file: BatchTree.File, url: String, partSize: Int64, session: any TransportSession,
        settings: TransportSettings, headers: HeaderFields,
        cancellation: Cancellation
    ) throws(TransferError) -> Bool {
        var headers = headers
        headers.set("x-amz-checksum-mode", "ENABLED")
        headers.set("Want-Repr-Digest", "sha-256=10")
        let result = session.headOnly(
            TransferRequest(method: "HEAD", url: url, headers: headers), settings: settings, cancellation: cancellation)
        guard result.outcome == .completed, let head = result.head else { return false }
        let fd = open(file.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw TransferError(.inputMissing, "cannot read \(file.path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        return try same(head, size: file.size, partSize: partSize) { algorithm, range throws(TransferError) in
            try FileDigest.digest(fd: fd, ranges: [range], algorithm, path: file.path)
        }
    }
}
