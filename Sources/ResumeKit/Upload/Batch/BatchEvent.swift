/// What a running batch reports, in order. The CLI renders these as a progress line or as `--json` events.
public enum BatchEvent: Sendable {
    /// Before any byte is sent: the id that `pause`, `resume`, `show`, `wait` and `cancel` take.
    case announced(id: String, files: Int, bytes: Int64)
    /// A file left out (a link, a special file, a name no target can carry): one line each.
    case leftOut(String)
    /// A sync's plan, one action a path, before any of them runs.
    case planned(SyncAction)
    case file(BatchFile, BatchFileEvent)
    /// Files done of all, and bytes (at most four a second).
    case progress(files: Int, of: Int, bytes: Int64, total: Int64)
    /// A retry, a note of one file's upload (the engine's own events).
    case transfer(BatchFile, TransferEvent)
    /// A line for the user, not part of the JSON stream: a file the checksum file does not name.
    case note(String)
}
