/// Why an exchange failed, as the transport saw it, sorted into what the retry rules tell apart.
public struct TransportFailure: Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// Connection refused, reset, cut short, timed out: the network may come back.
        case network
        /// The host name does not resolve.
        case resolve
        /// Bad URL, unsupported scheme, TLS verification failure, too many redirects.
        case fatal
        /// Reading the upload source failed.
        case localRead
    }
    public var kind: Kind
    public var code: Int
    public var message: String
    /// No connection could be made at all (refused, unreachable): the network or the server is gone.
    public var unreachable: Bool
    public var description: String { message }

    public init(kind: Kind, code: Int, message: String, unreachable: Bool = false) {
        self.kind = kind
        self.code = code
        self.message = message
        self.unreachable = unreachable
    }
}
