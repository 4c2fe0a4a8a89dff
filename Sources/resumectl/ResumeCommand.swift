import ArgumentParser
import ResumeKit

struct Resume: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Continue a transfer from its token, even after kill -9 or a reboot.")

    @Argument(help: "Token id (d-… or u-…) or the path of a token file.")
    var token: String

    @Option(help: "A replacement URL (e.g. a fresh signed link); a download accepts it only if it serves the same file.")
    var url: String?

    @OptionGroup var options: TransferOptionGroup

    func run() async throws {
        let client = options.client()
        let reporter = Reporter(json: options.json, quiet: options.quiet)
        let reference = token
        if let id = try? client.loadToken(reference).id { reporter.setToken(id) }
        let newURL = url
        let headers = options.header
        let result = try await Runner.run(reporter: reporter) { cancellation throws(TransferError) in
            try await client.resume(reference, newURL: newURL, headers: headers, cancellation: cancellation, events: reporter.handler)
        }
        switch result {
        case .downloaded(let d): reporter.result(d.path)
        case .uploaded(let u): reporter.result(u.url)
        }
    }
}
