import ArgumentParser
import ResumeKit

/// `resumectl` hands an `s3://` transfer (and the resume or cancel of one), and a folder download (whose
/// listing may be HTML), to `resumectl-s3` beside it, with the same arguments: libxml2 costs a plain HTTP
/// download about 4.5 MiB it never needs.
enum S3Handoff {
    static func needed(_ command: ParsableCommand) -> Bool {
        switch command {
        case let download as Download:
            return download.isFolder || (download.url.map(Route.isS3) ?? false)
        case let upload as Upload:
            return Route.isS3(upload.url)
        case let resume as Resume:
            return resume.token.map { isS3Token($0, store: resume.options.store) } ?? false
        case let cancel as Cancel:
            return isS3Token(cancel.token, store: cancel.state.store)
        default:
            return false
        }
    }

    private static func isS3Token(_ reference: String, store: TokenStore) -> Bool {
        let client = TransferClient(store: store)
        if let batch = client.batchRecord(reference) { return batch.s3 != nil || batch.download != nil }
        return (try? client.loadToken(reference))?.s3 != nil
    }
}
