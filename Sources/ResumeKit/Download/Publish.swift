import FoundationEssentials
import Glibc

/// The last step of every download: the checksum, then the atomic rename of the synced `.part` file
/// into place, the folder synced, the token gone, the `completed` event.
enum Publish {
    /// - Parameter keepToken: runs before a checksum mismatch is thrown, so the token stays for `cancel`.
    static func download(
        _ download: ResumeToken.DownloadPart, tokenID: String, bytes: Int64, sha256 digest: String?, store: TokenStore,
        emit: EventHandler, keepToken: () throws(TransferError) -> Void
    ) throws(TransferError) -> DownloadResult {
        if let expected = download.expectedSHA256, expected.lowercased() != digest {
            try keepToken()
            throw TransferError(.checksumMismatch,
                "checksum mismatch: expected sha256 \(expected), got \(digest ?? "?"); the data stays in \(download.partPath)",
                tokenID: tokenID)
        }
        guard rename(download.partPath, download.path) == 0 else {
            throw TransferError(.cannotCreateOutput,
                "cannot rename \(download.partPath) to \(download.path): \(String(cString: strerror(errno)))", tokenID: tokenID)
        }
        syncDirectory(Paths.parent(of: download.path))
        store.remove(id: tokenID)
        emit(.completed(location: download.path, bytes: bytes, sha256: digest))
        return DownloadResult(path: download.path, bytes: bytes, sha256: digest, alreadyComplete: false)
    }
}
