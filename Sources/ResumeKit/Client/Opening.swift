/// What opening a transfer found: the token to run (the one on disk, or a new one not yet written), or,
/// for a download, a finished file at its output path that nothing asked to replace.
enum Opening {
    case token(ResumeToken, isNew: Bool)
    case fileThere(String)
}
