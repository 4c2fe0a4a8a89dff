/// A transfer's hold on its token's lock file (`tokens/<id>.lock`, with the pid `pause` signals).
///
/// A list's download takes it just before its token is first written, or at once when the token exists
/// already: a file that ends before its first checkpoint never creates a lock file, which spares a list
/// of small files two inode operations per file in the state folder. Until then the `flock` on the
/// `.part` file keeps a second process out. Everything else takes it at once.
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
        } catch { throw TransferError(.localIO, "\(error)") }
        do {
            lock = try TokenLock(path: store.lockPath(forID: id))
        } catch let failure as TokenLock.Failure {
            if case .held = failure { throw TransferError(.busy, "\(failure); not starting a second one") }
            throw TransferError(.localIO, "\(failure)")
        } catch {
            throw TransferError(.localIO, "\(error)")
        }
    }

    /// A lock file without a token (the transfer failed or was refused before its first checkpoint) goes too.
    func release() {
        guard let lock else { return }
        lock.release(removingFile: !store.exists(id: id))
    }
}
