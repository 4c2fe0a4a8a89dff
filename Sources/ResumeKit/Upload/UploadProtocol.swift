/// The resumable-upload protocols a token can name (`upload.protocol`).
public enum UploadProtocol: String, Sendable, Codable, CaseIterable {
    /// draft-ietf-httpbis-resumable-upload (POST + 104, HEAD, PATCH).
    case ietf
    /// tus 1.0.0 (OPTIONS, POST with Upload-Length, HEAD, PATCH, DELETE).
    case tus
    /// One request carrying the whole file; a failure sends it all again.
    case plain
    /// S3 multipart (CreateMultipartUpload, parts in parallel, CompleteMultipartUpload).
    case s3
}
