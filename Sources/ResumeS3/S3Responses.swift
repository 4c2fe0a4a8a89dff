import Foundation
import ResumeKit

/// An object a listing returned.
public struct S3Object: Sendable, Equatable {
    public var key: String
    public var size: Int64
    public var etag: String
}

/// S3's `<Error>` body: the code scripts and users look for (`SignatureDoesNotMatch`, `NoSuchUpload` …).
public struct S3ErrorBody: Sendable, Equatable {
    public var code: String
    public var message: String

    /// One line for stderr: S3's code and message, never a request's credentials.
    public var line: String { message.isEmpty ? "S3 answered \(code)" : "S3 answered \(code): \(message)" }
}

/// Reads the XML bodies of the S3 calls resumectl makes.
public enum S3Responses {
    /// The `<Error>` in a body, if that is what it is. S3 may send one with a 200 (CompleteMultipartUpload).
    public static func error(_ body: Data) -> S3ErrorBody? {
        guard let tree = XMLTree.parse(body), tree.name == "Error" else { return nil }
        return S3ErrorBody(code: tree["Code"] ?? "UnknownError", message: tree["Message"] ?? "")
    }

    /// CreateMultipartUpload → the upload id.
    public static func uploadID(_ body: Data) throws(TransferError) -> String {
        let tree = try document(body, "InitiateMultipartUploadResult")
        guard let id = tree["UploadId"], !id.isEmpty else { throw malformed("InitiateMultipartUploadResult without an UploadId") }
        return id
    }

    /// One page of ListParts: the parts, and the marker of the next page when there is one.
    public static func parts(_ body: Data) throws(TransferError) -> (parts: [ListedPart], nextMarker: String?) {
        let tree = try document(body, "ListPartsResult")
        var parts: [ListedPart] = []
        for part in tree.children("Part") {
            guard let number = part["PartNumber"].flatMap({ Int($0) }), let size = part["Size"].flatMap({ Int64($0) }),
                let etag = part["ETag"]
            else { throw malformed("a Part of ListPartsResult lacks its number, size or ETag") }
            parts.append(ListedPart(number: number, size: size, etag: etag))
        }
        let truncated = tree["IsTruncated"] == "true"
        return (parts, truncated ? tree["NextPartNumberMarker"] : nil)
    }

    /// CompleteMultipartUpload → the object's ETag; an `<Error>` (even with a 200) is thrown with its code.
    public static func completedETag(_ body: Data) throws(TransferError) -> String {
        let tree = try document(body, "CompleteMultipartUploadResult")
        guard let etag = tree["ETag"] else { throw malformed("CompleteMultipartUploadResult without an ETag") }
        return etag
    }

    /// One page of ListObjectsV2: the objects, and the continuation token of the next page when there is one.
    public static func objects(_ body: Data) throws(TransferError) -> (objects: [S3Object], continuation: String?) {
        let tree = try document(body, "ListBucketResult")
        var objects: [S3Object] = []
        for item in tree.children("Contents") {
            guard let key = item["Key"], let size = item["Size"].flatMap({ Int64($0) }) else {
                throw malformed("an object of ListBucketResult lacks its key or size")
            }
            objects.append(S3Object(key: key, size: size, etag: item["ETag"] ?? ""))
        }
        let truncated = tree["IsTruncated"] == "true"
        return (objects, truncated ? tree["NextContinuationToken"] : nil)
    }

    private static func document(_ body: Data, _ root: String) throws(TransferError) -> XMLTree {
        guard let tree = XMLTree.parse(body) else { throw malformed("an answer that is not XML where \(root) was expected") }
        if tree.name == "Error" {
            let error = S3ErrorBody(code: tree["Code"] ?? "UnknownError", message: tree["Message"] ?? "")
            throw TransferError(.failed, error.line)
        }
        guard tree.name == root else { throw malformed("<\(tree.name)> where \(root) was expected") }
        return tree
    }

    private static func malformed(_ what: String) -> TransferError {
        TransferError(.failed, "S3 sent \(what)")
    }
}
