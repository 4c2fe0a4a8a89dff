/// One HTTP exchange to run: the seam between the protocol logic and libcurl.
public struct TransferRequest: Sendable, Equatable {
    public var method: String
    public var url: String
    public var headers: HeaderFields
    /// Follow redirects (at most 10, http and https only; a hop to another origin without the headers that
    /// ``Redact/isSecretHeader(_:)`` marks). Off for upload resources, whose redirects the draft wants handled
    /// by the client.
    public var followRedirects: Bool
    /// The request body, read from a file at the time it is sent.
    public var body: RequestBody?

    public init(
        method: String, url: String, headers: HeaderFields = [:], followRedirects: Bool = false,
        body: RequestBody? = nil
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.followRedirects = followRedirects
        self.body = body
    }
}
