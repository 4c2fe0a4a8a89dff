import ArgumentParser
import Foundation
import ResumeKit

struct Download: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Download a URL; an interrupted download resumes with Range and If-Range.",
        discussion: """
            The body goes to PATH.part and is renamed to PATH only when complete and verified.
            Running the same command again continues where it stopped.
            """)

    @Argument(help: "http or https URL.")
    var url: String

    @Option(name: [.short, .customLong("output")], help: "Where to write the file (default: the URL's last path segment here).")
    var output: String?

    @Option(help: "Verify the result: sha256=HEX.")
    var checksum: String?

    @Option(name: .customLong("on-change"), help: "When the file changed on the server: restart or fail.")
    var onChange: DownloadStateMachine.OnChange = .restart

    @Flag(help: "Replace an existing file at the output path.")
    var force = false

    @OptionGroup var options: TransferOptionGroup

    func validate() throws {
        if let checksum { _ = try Checksum.parse(checksum) }
    }

    func run() async throws {
        let request = DownloadRequest(
            url: url, outputPath: output, headers: options.header, expectedSHA256: try checksum.map(Checksum.parse),
            onChange: onChange, force: force)
        let client = options.client()
        let reporter = Reporter(json: options.json, quiet: options.quiet)
        let result = try await Runner.run(reporter: reporter) { cancellation throws(TransferError) in
            try await client.download(request, cancellation: cancellation, events: reporter.eventsWithToken(client: client, request: request))
        }
        reporter.result(result.path)
    }
}

extension DownloadStateMachine.OnChange: ExpressibleByArgument {}

enum Checksum {
    /// `sha256=HEX` → the lowercase hex digest.
    static func parse(_ text: String) throws -> String {
        let parts = text.split(separator: "=", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "sha256" else {
            throw ValidationError("--checksum takes sha256=HEX")
        }
        let hex = parts[1].lowercased()
        guard hex.count == 64, hex.allSatisfy({ $0.isHexDigit }) else {
            throw ValidationError("--checksum: a sha256 is 64 hex digits")
        }
        return hex
    }
}

extension Reporter {
    /// The event handler, with the token id the JSON events carry.
    func eventsWithToken(client: TransferClient, request: DownloadRequest) -> EventHandler {
        if let id = client.downloadTokenID(request) { setToken(id) }
        return handler
    }
}
