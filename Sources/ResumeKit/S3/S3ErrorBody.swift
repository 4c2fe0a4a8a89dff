/// S3's `<Error>` body: the code scripts and users look for (`SignatureDoesNotMatch`, `NoSuchUpload` …).
public struct S3ErrorBody: Sendable, Equatable {
    public var code: String
    public var message: String

    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    /// One line for stderr: S3's code and message, never a request's credentials.
    public var line: String { message.isEmpty ? "S3 answered \(code)" : "S3 answered \(code): \(message)" }
}
