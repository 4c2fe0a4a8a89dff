import ArgumentParser
import ResumeKit

struct Resume: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Continue a transfer from its token, even after kill -9 or a reboot.",
        discussion: """
            Connection options the transfer began with (--cacert, -k, -x, --http1.1 …) are kept in the token and
            used again; an option given now replaces the kept one. Logins (-u, --netrc) and -H credentials are
            never kept: give them again.

            EXAMPLES:
              resumectl resume d-1a2b3c4d5e6f7a8b
              resumectl resume d-1a2b3c4d5e6f7a8b --url https://example.com/new-link
              resumectl resume u-1a2b3c4d5e6f7a8b -u alice
            """)

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
