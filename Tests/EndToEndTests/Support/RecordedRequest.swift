/// One request as a test server saw it, so a test can assert what the client sent (an `If-Range`, no
/// `Accept-Encoding`, a HEAD before every PATCH…) and what it was answered.
public struct RecordedRequest: Sendable, CustomStringConvertible {
    public let method: String
    /// The request target as sent: path and query.
    public let target: String
    /// Header fields in the order received, names as sent.
    public let headers: [(name: String, value: String)]
    /// Body bytes that arrived with this request (on the wire, before any resumable-upload processing).
    public internal(set) var bodyBytes = 0
    /// Status codes answered, in order: informational ones (100, 104) first, then the final one.
    public internal(set) var responseStatuses: [Int] = []

    public init(method: String, target: String, headers: [(name: String, value: String)]) {
        self.method = method
        self.target = target
        self.headers = headers
    }

    /// The first value of the header `name` (case-insensitive), nil if absent.
    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// The final status answered, nil if none was sent (connection cut before a response).
    public var finalStatus: Int? { responseStatuses.last { $0 >= 200 } }

    public var description: String {
        "\(method) \(target) → \(responseStatuses) " + headers.map { "\($0.name): \($0.value)" }.joined(separator: "; ")
    }
}
