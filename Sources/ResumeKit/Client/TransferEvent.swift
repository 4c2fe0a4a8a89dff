/// What a running transfer reports, in order: the CLI's progress bar or `--json` event stream.
public enum TransferEvent: Sendable, Equatable {
    case started(kind: ResumeToken.Kind, url: String, path: String, offset: Int64, total: Int64?)
    /// At most four a second.
    case progress(bytes: Int64, total: Int64?, rate: Double)
    case retry(attempt: Int, delay: Double, error: String)
    /// The network is gone (`waitForNetwork`): the next try is in `delay` seconds; no retry is spent.
    case waitingForNetwork(delay: Double, error: String)
    case restarted(reason: String)
    case paused(offset: Int64)
    case completed(location: String, bytes: Int64, sha256: String?)
    /// A note for the user, not part of the JSON stream (e.g. "the server cannot resume uploads").
    case note(String)
    /// Something the user must hear even with `-q`, once a run however many transfers it has.
    case warning(TransferWarning)
}

/// Receives events; called from the transfer's own thread.
public typealias EventHandler = @Sendable (TransferEvent) -> Void
