/// A transfer's hold on its token: the lock file (`tokens/<id>.lock`, with the pid `pause` signals), and
/// the token found under it, if any. Every entry point of ``TransferClient`` goes through one of these.
/// A list's download takes it only once its token exists or is first written (the `.part`'s `flock` keeps a
/// second process out until then): a small file that ends sooner spares the state folder two inode operations.
final class TokenGuard {
    private let store: TokenStore
    let id: String
    private var lock: TokenLock?

    init(store: TokenStore, id: String) {
        self.store = store
        self.id = id
    }

    /// Takes the lock unless this guard holds it already.
    func hold() throws(TransferError) {
        guard lock == nil else { return }
        do {
            try store.ensureDirectory()
            lock = try TokenLock(path: store.lockPath(forID: id))
        } catch {
            if case .held? = error as? TokenLock.Failure {
                throw TransferError(.busy, "\(error); not starting a second one")
            }
            throw TransferError(.localIO, "\(error)")
        }
    }

    /// The token on disk, when there is one: it must be a `kind` transfer that `has` accepts (else 65,
    /// saying it is not `what`). Read under the lock, so no other process changes it meanwhile.
    func existing(
        _ kind: ResumeToken.Kind, _ what: String, has: (ResumeToken) -> Bool = { _ in true }
    ) throws(TransferError) -> ResumeToken? {
        guard store.exists(id: id) else { return nil }
        let token = try store.loadChecked(id)
        guard token.kind == kind, has(token) else { throw TransferError(.badToken, "token \(id) is not \(what)") }
        return token
    }

    /// A lock file without a token (the transfer failed or was refused before its first checkpoint) goes too.
    func release() {
        guard let lock else { return }
        lock.release(removingFile: !store.exists(id: id))
    }
}
