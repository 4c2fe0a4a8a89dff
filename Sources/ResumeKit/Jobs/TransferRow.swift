/// One transfer as `list` shows it: what it is, where it stands and how far it got, from its state
/// (token, record, live status).
public struct TransferRow {
    public let state: TransferState
    public let committed: Int64?
    public let total: Int64?
    public let kind: String
    public let url: String
    public let location: String

    public init(_ state: TransferState) {
        self.state = state
        if let token = state.token {
            kind = token.kind.rawValue
            url = Redact.url(token.url) + (token.download?.mirrorsInUse.map { " (\($0))" } ?? "")
            switch token.transfer {
            case .download(let d): (committed, total, location) = (d.heldBytes, d.totalBytes, d.path)
            case .upload(let u):
                committed = u.acknowledgedBytes
                // A stream's length is known only once stdin ended.
                total = u.stream.map { $0.ended ? $0.durable : nil } ?? u.source.size
                location =
                    u.stream.map {
                        $0.ended
                            ? "- (stdin, ended; resume sends the rest from the spool)"
                            : "- (stdin, cut before its end; resume needs the same stream piped in)"
                    } ?? u.source.path
            }
        } else {
            kind = state.record?.kind.rawValue ?? ""
            url = state.record?.url ?? ""
            committed = state.record?.bytes
            total = state.record?.outcome == .done ? state.record?.bytes : nil
            location = state.record?.path ?? ""
        }
    }

    /// Live progress beats the last checkpoint.
    public var bytes: Int64? { state.live?.bytes ?? committed }
    public var size: Int64? { total ?? state.live?.total }
    public var percent: Double? {
        guard let bytes, let size, size > 0 else { return state.phase == .done ? 100 : nil }
        return min(100, Double(bytes) * 100 / Double(size))
    }
    public var rate: Double? { state.isRunning ? state.live?.rate : nil }
    public var pid: Int32? { if case .running(let pid, _) = state.phase { pid } else { nil } }
}
