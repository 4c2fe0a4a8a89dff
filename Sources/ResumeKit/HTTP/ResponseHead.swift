/// One response's status line and header fields, informational (1xx) or final.
public struct ResponseHead: Sendable, Equatable {
    public var status: Int
    public var reason: String
    public var headers: HeaderFields

    public init(status: Int, reason: String = "", headers: HeaderFields = [:]) {
        self.status = status
        self.reason = reason
        self.headers = headers
    }

    public var isInformational: Bool { (100..<200).contains(status) }
    public var isSuccess: Bool { (200..<300).contains(status) }
    public var isRedirect: Bool { [301, 302, 303, 307, 308].contains(status) }
}
