/// What a 1xx response during an upload told.
public enum UploadInformational: Sendable, Equatable {
    case nothing
    /// The upload resource: persist it at once, before the body is through.
    case uploadURL(String)
    /// The server's limit is below the file's size: stop sending.
    case tooLarge(limit: Int64)
}
