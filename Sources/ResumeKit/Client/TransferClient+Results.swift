import FoundationEssentials
import Glibc

extension TransferClient {
    /// Where this client keeps the records of ended transfers (beside the tokens).
    public var results: ResultStore { ResultStore(directory: store.directory) }

    /// The record of a transfer that ended, or nil when neither a token nor a record knows `reference`.
    public func record(_ reference: String) -> TransferRecord? {
        results.load(id: reference)
    }

    /// Runs a transfer and keeps the record of its end (none without an `id`: a list's file that got no token).
    func recorded<Result>(
        id: String?, kind: ResumeToken.Kind, url: String, source: String? = nil, failedURL: String? = nil,
        _ run: () throws(TransferError) -> Result, as outcome: (Result) -> TransferResult
    ) throws(TransferError) -> Result {
        let began = Date()
        do throws(TransferError) {
            let result = try run()
            if let id { recordDone(id: id, kind: kind, url: url, result: outcome(result), source: source, since: began) }
            return result
        } catch {
            if let id { recordFailure(error, id: id, kind: kind, url: failedURL ?? url, source: source) }
            throw error
        }
    }

    /// - Parameter since: when the transfer began; a record written since (by the finish, before the token
    ///   went) is not written twice.
    private func recordDone(id: String, kind: ResumeToken.Kind, url: String, result: TransferResult, source: String? = nil, since: Date) {
        // While this run holds the id's lock only its finish writes the record, and only as "done": a record
        // written since the start is that one, known by a stat rather than by reading it back. (A file clock
        // behind `since` by a tick costs a second write of the same record, never a lost one.)
        var st = stat()
        if stat(results.path(forID: id), &st) == 0,
            Double(st.st_mtim.tv_sec) + Double(st.st_mtim.tv_nsec) / 1e9 >= since.timeIntervalSince1970 { return }
        let record: TransferRecord
        switch result {
        case .downloaded(let d):
            record = TransferRecord(
                id: id, kind: kind, outcome: .done, exit: 0, resumable: false, url: url, path: d.path, bytes: d.bytes, sha256: d.sha256)
        case .uploaded(let u):
            let path = source.map(OutputPath.absolute) ?? ((try? store.load(id))?.upload?.source.path)
            record = TransferRecord(
                id: id, kind: kind, outcome: .done, exit: 0, resumable: false, url: u.url, path: path, bytes: u.bytes, sha256: u.sha256)
        }
        try? results.save(record)
    }

    /// Keeps the end of a transfer that was announced. Refusals before it began (bad arguments, a token
    /// that does not exist or cannot be read) and "running elsewhere" leave no record: the one running owns it.
    func recordFailure(_ error: TransferError, id: String, kind: ResumeToken.Kind, url: String, source: String? = nil) {
        switch error.code {
        case .usage, .busy, .inputMissing, .badToken: return
        default: break
        }
        let token = try? store.load(id)
        let path = token?.download?.path ?? token?.upload?.source.path ?? source.map(OutputPath.absolute)
            ?? (kind == .download ? try? OutputPath.resolve(url: url, output: nil) : nil)
        let bytes = token.map { t in
            t.download?.heldBytes ?? t.upload?.acknowledgedBytes ?? 0
        }
        let outcome: TransferRecord.Outcome = if case .stopped = error.code { .paused } else { .failed }
        try? results.save(TransferRecord(
            id: id, kind: kind, outcome: outcome, exit: error.exitStatus, resumable: error.isResumable && token != nil, url: url,
            path: path, bytes: bytes, error: error.message))
    }

    /// `resume` of a transfer whose token is gone: a completed one answers as it did; any other says how it ended.
    func endedResult(_ reference: String, events: EventHandler) throws(TransferError) -> TransferResult? {
        guard let record = results.load(id: reference) else { return nil }
        switch record.outcome {
        case .done:
            events(.completed(location: record.resultLine, bytes: record.bytes ?? 0, sha256: record.sha256))
            switch record.kind {
            case .download:
                return .downloaded(DownloadResult(path: record.resultLine, bytes: record.bytes ?? 0, sha256: record.sha256))
            case .upload:
                return .uploaded(UploadResult(url: record.url, bytes: record.bytes ?? 0, sha256: record.sha256))
            }
        case .cancelled:
            throw TransferError(.inputMissing, "\(record.id) was cancelled; there is nothing to resume")
        case .failed, .paused:
            throw TransferError(record.exit == 0 ? .failed : Self.code(forExit: record.exit),
                "\(record.id) failed and cannot be resumed: \(record.error ?? "unknown error")")
        }
    }

    private static func code(forExit status: Int32) -> TransferError.Code {
        switch status {
        case 65: .checksumMismatch
        case 73: .cannotCreateOutput
        case 74: .localIO
        default: .failed
        }
    }
}
