public enum BatchFileEvent: Sendable, Equatable {
    case started
    case completed(bytes: Int64)
    /// `reason`: the target holds it already (`--skip-existing`), or this batch sent it earlier.
    case skipped(reason: String)
    /// Changed since its upload began: sent again from its first byte.
    case restarted(reason: String)
    case failed(TransferError)
    /// A sync's delete phase removed it from the destination.
    case deleted
}
