import Glibc
import ResumeKit
import ResumeMarkup

extension Download {
    /// Whether a URL or path names a Metalink (RFC 5854's `.meta4`, or the older `.metalink` suffix).
    static func namesMetalink(_ location: String) -> Bool {
        let path = location.split(separator: "?", maxSplits: 1).first.map(String.init) ?? location
        return path.hasSuffix(".meta4") || path.hasSuffix(".metalink")
    }

    /// The download a Metalink of one file describes: its URLs by priority (the first the token's, the others
    /// mirrors, with any `--mirror` given), its SHA-256, its piece hashes, its name (here, or in `-o`'s folder).
    func metalinkRequest(_ location: String, client: TransferClient) throws(TransferError) -> DownloadRequest {
        let bytes = try client.document(
            location, headers: options.header, what: "the Metalink", cancellation: Cancellation())
        let file: Metalink.File
        do {
            let files = try Metalink.parse(bytes).files
            guard files.count == 1 else {
                throw TransferError(.badListing, "it describes \(files.count) files; give a Metalink of one file")
            }
            file = files[0]
        } catch let error as TransferError {
            throw TransferError(error.code, "\(location): \(error.message)")
        } catch {
            throw TransferError(.badListing, "\(location): \(error)")
        }
        let urls = file.urls.map(\.url).filter { $0.hasPrefix("http://") || $0.hasPrefix("https://") }
        guard let first = urls.first else {
            throw TransferError(.badListing, "\(location): it lists no http or https URL for \(file.name)")
        }
        let sha256 = file.hex("sha-256")
        let pieces = file.pieces
        guard sha256 != nil || pieces != nil || checksum != nil else {
            throw TransferError(
                .badListing, "\(location): it gives no SHA-256 or piece hashes to check \(file.name) by")
        }
        if pieces?.algorithm == "sha-1", !options.quiet {
            Output.stderr("resumectl: warning: \(location) checks pieces by SHA-1 only, which can be forged\n")
        }
        var target = file.name
        if let output {
            var isFolder = stat()
            target =
                output.hasSuffix("/") || (stat(output, &isFolder) == 0 && (isFolder.st_mode & S_IFMT) == S_IFDIR)
                ? (output.hasSuffix("/") ? output : output + "/") + file.name : output
        }
        var request = DownloadRequest(
            url: first, outputPath: target, headers: options.header,
            expectedSHA256: checksum.flatMap { try? Checksum.parse($0) } ?? sha256, onChange: onChange, force: force)
        request.mirrors = Array(urls.dropFirst()) + mirror
        request.pieces = pieces
        return request
    }
}
