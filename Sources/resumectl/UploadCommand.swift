import ArgumentParser
import ResumeKit

struct Upload: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Upload a file with the IETF resumable-upload draft (POST, 104, HEAD, PATCH).",
        discussion: """
            The upload URL the server announces in its 104 response is saved at once, so an upload cut at
            any point continues with 'resumectl resume TOKEN' from the offset the server reports.

            EXAMPLES:
              resumectl upload backup.tar https://uploads.example.com/files/backup.tar
              resumectl upload --chunk-size 64M backup.tar https://uploads.example.com/f/
              resumectl upload -u alice --cacert ca.pem a.tar https://intranet.example/up/
            """)

    @Argument(help: "The file to send.")
    var file: String

    @Argument(help: "http or https URL that accepts the upload.")
    var url: String

    @Option(name: .customLong("interop-version"), help: "Pin the draft interop version (3, 5, 6 or 8) instead of negotiating.")
    var interopVersion: Int?

    @Option(name: .customLong("chunk-size"), help: "Send the file in appends of at most this many bytes (suffix k, M or G).")
    var chunkSize: ByteRate?

    @OptionGroup var options: TransferOptionGroup

    func validate() throws {
        if let v = interopVersion, InteropVersion(rawValue: v) == nil {
            throw ValidationError("--interop-version takes one of \(InteropVersion.allCases.map { String($0.rawValue) }.joined(separator: ", "))")
        }
    }

    func run() async throws {
        let request = UploadRequest(
            filePath: file, url: url, headers: options.header, interopVersion: interopVersion.flatMap(InteropVersion.init),
            chunkSize: chunkSize?.bytesPerSecond)
        let client = options.client()
        let reporter = Reporter(json: options.json, quiet: options.quiet, tokenID: client.uploadTokenID(request))
        let result = try await Runner.run(reporter: reporter) { cancellation throws(TransferError) in
            try await client.upload(request, cancellation: cancellation, events: reporter.handler)
        }
        reporter.result(result.url)
    }
}
