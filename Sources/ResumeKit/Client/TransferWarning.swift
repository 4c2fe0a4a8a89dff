/// What a transfer warns of.
public enum TransferWarning: Sendable, Equatable {
    /// TLS certificates are not verified (`--insecure`).
    case insecure
    /// The token keeps these credential headers by name only, and this run does not give them again.
    case withheldHeaders([String])
    /// A mirror of the file is no longer used: it failed, its file changed, or its bytes failed a checksum.
    case mirrorDropped(url: String, reason: String)
    /// `--connections N` asked for requests side by side, and this upload goes as one request stream: why.
    case oneConnection(String)

    /// The line the user reads.
    public var message: String {
        switch self {
        case .insecure:
            "warning: TLS certificates are not verified (--insecure); anyone on the path can read and change this "
                + "transfer"
        case .withheldHeaders(let names):
            "warning: \(names.count == 1 ? "header" : "headers") \(names.joined(separator: ", ")) of this transfer "
                + "\(names.count == 1 ? "is" : "are") never stored: "
                + "give \(names.count == 1 ? "it" : "them") again, e.g. "
                + names.map { "-H '\($0): VALUE'" }.joined(separator: " ")
        case .mirrorDropped(let url, let reason): "warning: mirror \(Redact.url(url)) dropped: \(reason)"
        case .oneConnection(let reason): "warning: one connection: \(reason)"
        }
    }
}
