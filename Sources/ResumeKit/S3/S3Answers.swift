/// Reads the XML bodies of the S3 calls resumectl makes. ResumeKit itself parses no XML: a program passes a
/// reader in (`ResumeMarkup.S3Responses`, over libxml2, which is loaded only when an answer is read).
public protocol S3Answers: Sendable {
    /// The `<Error>` in a body, if that is what it is. S3 may send one with a 200 (CompleteMultipartUpload).
    func error(_ body: [UInt8]) -> S3ErrorBody?
    /// CreateMultipartUpload → the upload id.
    func uploadID(_ body: [UInt8]) throws(TransferError) -> String
    /// One page of ListParts: the parts, and the marker of the next page when there is one.
    func parts(_ body: [UInt8]) throws(TransferError) -> (parts: [ListedPart], nextMarker: String?)
    /// CompleteMultipartUpload → the object's ETag; an `<Error>` (even with a 200) is thrown with its code.
    func completedETag(_ body: [UInt8]) throws(TransferError) -> String
    /// One page of ListObjectsV2: the objects, and the continuation token of the next page when there is one.
    func objects(_ body: [UInt8]) throws(TransferError) -> (objects: [S3Object], continuation: String?)
}
