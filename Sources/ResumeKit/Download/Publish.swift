import FoundationEssentials
import Glibc
import SystemPackage

/// The last step of every download: the checksum, then the atomic rename of the synced `.part` file
/// into place, the folder synced, the token gone, the `completed` event.
enum Publish {
    /// Everything of a finished download that its publication needs.
    struct Finished {
        var download: ResumeToken.DownloadPart
        var tokenID: String
        /// The URL the user gave, for the result record.
        var url: String = ""
        /// False when the download ended before its first checkpoint: there is no token to remove.
        var tokenOnDisk: Bool
        var bytes: Int64
        var sha256: String?
        var emit: EventHandler

        var result: DownloadResult {
            DownloadResult(path: download.path, bytes: bytes, sha256: sha256)
        }
    }

    /// Checks the expected checksum; `keepToken` runs before a mismatch is thrown, so the token stays for `cancel`.
    static func verify(_ finished: Finished, keepToken: () throws(TransferError) -> Void) throws(TransferError) {
        let download = finished.download
        if let expected = download.expectedSHA256, expected.lowercased() != finished.sha256 {
            try keepToken()
            throw TransferError(
                .checksumMismatch,
                "checksum mismatch: expected sha256 \(expected), got \(finished.sha256 ?? "?"); the data stays in "
                    + "\(download.partPath)",
                tokenID: finished.tokenID)
        }
    }

    /// Publishes one verified download whose data is synced already.
    static func place(_ finished: Finished, store: TokenStore) throws(TransferError) -> DownloadResult {
        try rename(finished)
        syncDirectory(Paths.parent(of: finished.download.path))
        // A download that never wrote a token never showed its id: its record (for `wait` or `show` by the
        // id `list` showed while it ran) needs no sync, as no one was promised that it survives a power cut.
        if !finished.tokenOnDisk { record(finished, store: store, durably: false) }
        complete(finished, store: store)
        return finished.result
    }

    /// Moves the `.part` file to its final name; its data must be on disk already. The file takes the server's
    /// `Last-Modified` as its time first (as wget does, and curl -R): a folder download's `--skip-existing`
    /// compares it with the listing's, and it is there from the moment the name is.
    static func rename(_ finished: Finished) throws(TransferError) {
        let download = finished.download
        if let seconds = download.lastModified.flatMap(HTTPDate.parse) {
            var times = [timespec(tv_sec: Int(seconds), tv_nsec: 0), timespec(tv_sec: Int(seconds), tv_nsec: 0)]
            _ = utimensat(AT_FDCWD, download.partPath, &times, 0)
        }
        guard Glibc.rename(download.partPath, download.path) == 0 else {
            throw TransferError(
                .cannotCreateOutput,
                "cannot rename \(download.partPath) to \(download.path): \(String(cString: strerror(errno)))",
                tokenID: finished.tokenOnDisk ? finished.tokenID : nil)
        }
    }

    /// After the rename is durable: the token goes, the `completed` event is sent.
    static func complete(_ finished: Finished, store: TokenStore) {
        if finished.tokenOnDisk {
            // The record before the token goes: a kill in between leaves an id that still answers.
            record(finished, store: store, durably: true)
            store.remove(id: finished.tokenID, durably: false)
        }
        finished.emit(.completed(location: finished.download.path, bytes: finished.bytes, sha256: finished.sha256))
    }

    private static func record(_ finished: Finished, store: TokenStore, durably: Bool) {
        try? ResultStore(directory: store.directory).save(
            TransferRecord(
                id: finished.tokenID, kind: .download, outcome: .done, exit: 0, resumable: false, url: finished.url,
                path: finished.download.path, bytes: finished.bytes, sha256: finished.sha256), durably: durably)
    }
}
