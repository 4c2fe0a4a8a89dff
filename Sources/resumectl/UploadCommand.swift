import ArgumentParser
import ResumeKit

struct Upload: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Upload a file with the IETF resumable-upload draft (POST, 104, HEAD, PATCH).",
        discussion: """
            The upload URL the server announces in its 104 response is saved at once, so an upload cut at
            any point continues with 'resumectl resume TOKEN' from the offset the server reports.
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

    @OptionGroup var background: BackgroundOptions

    func validate() throws {
        if let v = interopVersion, InteropVersion(rawValue: v) == nil {
            throw ValidationError("--interop-version takes one of \(InteropVersion.allCases.map { String($0.rawValue) }.joined(separator: ", "))")
        }
    }

    func run() async throws {
        let request = UploadRequest(
            filePath: file, url: url, headers: options.header, interopVersion: interopVersion.flatMap(InteropVersion.init),
            chunkSize: chunkSize?.bytesPerSecond)
        var configured = options.client()
        configured.options.waitForNetwork = background.waitsForNetwork
        let client = configured
        if background.detach {
            let id: String
            do { id = try client.prepare(request) } catch { throw Runner.fail(error, json: options.json) }
            try Detach.launch(id: id, announce: id, stateDir: client.store.directory, arguments: Detach.childArguments())
        }
        let id = client.uploadTokenID(request)
        let reporter = Reporter(json: options.json, quiet: options.quiet, tokenID: id)
        let result = try await Foreground.run(id: id, kind: .upload, url: url, client: client, background: background, reporter: reporter) {
            cancellation, events throws(TransferError) in
            try await client.upload(request, cancellation: cancellation, events: events)
        }
        reporter.result(result.url)
    }
}
