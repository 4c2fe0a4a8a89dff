import ResumeKit

/// Reads the XML bodies of the S3 calls resumectl makes, with libxml2.
public struct S3Responses: S3Answers {
    public init() {}

    public func error(_ body: [UInt8]) -> S3ErrorBody? {
        guard let tree = XMLTree.parse(body), tree.name == "Error" else { return nil }
        return S3ErrorBody(code: tree["Code"] ?? "UnknownError", message: tree["Message"] ?? "")
    }

    public func uploadID(_ body: [UInt8]) throws(TransferError) -> String {
        let tree = try document(body, "InitiateMultipartUploadResult")
        guard let id = tree["UploadId"], !id.isEmpty else {
            throw malformed("InitiateMultipartUploadResult without an UploadId")
        }
        return id
    }

    public func parts(_ body: [UInt8]) throws(TransferError) -> (parts: [ListedPart], nextMarker: String?) {
        let tree = try document(body, "ListPartsResult")
        var parts: [ListedPart] = []
        var numbers = Set<Int>()
        for part in tree.children("Part") {
            guard let number = part["PartNumber"].flatMap({ Int($0) }), let size = part["Size"].flatMap({ Int64($0) }),
                let etag = part["ETag"]
            else { throw malformed("a Part of ListPartsResult lacks its number, size or ETag") }
            // A part listed twice, out of S3's 1...10000 or of negative size cannot be trusted to skip
            // uploading it (found by FuzzS3XML's property).
            guard (1...10_000).contains(number), size >= 0 else {
                throw malformed("a Part of ListPartsResult numbered \(number) of \(size) bytes")
            }
            guard numbers.insert(number).inserted else { throw malformed("part \(number) twice in ListPartsResult") }
            var checksums: [String: String] = [:]
            for name in ["CRC32C", "CRC32"] { if let value = part["Checksum" + name] { checksums[name] = value } }
            parts.append(ListedPart(number: number, size: size, etag: etag, checksums: checksums))
        }
        let truncated = tree["IsTruncated"] == "true"
        return (parts, truncated ? tree["NextPartNumberMarker"] : nil)
    }

    public func completedETag(_ body: [UInt8]) throws(TransferError) -> String {
        let tree = try document(body, "CompleteMultipartUploadResult")
        guard let etag = tree["ETag"] else { throw malformed("CompleteMultipartUploadResult without an ETag") }
        return etag
    }

    /// UploadPartCopy's answer: the copied part's ETag.
    public func copiedETag(_ body: [UInt8]) throws(TransferError) -> String {
        let tree = try document(body, "CopyPartResult")
        guard let etag = tree["ETag"] else { throw malformed("CopyPartResult without an ETag") }
        return etag
    }

    public func objects(_ body: [UInt8]) throws(TransferError) -> (objects: [S3Object], continuation: String?) {
        let tree = try document(body, "ListBucketResult")
        var objects: [S3Object] = []
        for item in tree.children("Contents") {
            guard let key = item["Key"], let size = item["Size"].flatMap({ Int64($0) }), size >= 0 else {
                throw malformed("an object of ListBucketResult lacks its key or size")
            }
            objects.append(S3Object(key: key, size: size, etag: item["ETag"] ?? "", lastModified: item["LastModified"]))
        }
        let truncated = tree["IsTruncated"] == "true"
        return (objects, truncated ? tree["NextContinuationToken"] : nil)
    }

    private func document(_ body: [UInt8], _ root: String) throws(TransferError) -> XMLTree {
        guard let tree = XMLTree.parse(body) else {
            throw malformed("an answer that is not XML where \(root) was expected")
        }
        if tree.name == "Error" {
            let error = S3ErrorBody(code: tree["Code"] ?? "UnknownError", message: tree["Message"] ?? "")
            throw TransferError(.failed, error.line)
        }
        // moto names some roots after the operation (`CompleteMultipartUploadResponse`); the content is the same.
        guard tree.name == root || (root.hasSuffix("Result") && tree.name == root.dropLast(6) + "Response") else {
            throw malformed("<\(tree.name)> where \(root) was expected")
        }
        return tree
    }

    private func malformed(_ what: String) -> TransferError {
        TransferError(.failed, "S3 sent \(what)")
    }
}
