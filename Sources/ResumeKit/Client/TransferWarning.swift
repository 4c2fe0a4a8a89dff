/// What a transfer warns of.
public enum TransferWarning: Sendable, Equatable {
    /// TLS certificates are not verified (`--insecure`).
    case insecure

    /// The line the user reads.
    public var message: String {
        switch self {
        case .insecure: "warning: TLS certificates are not verified (--insecure); anyone on the path can read and change this transfer"
        }
    }
}
