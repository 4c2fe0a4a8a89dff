import ArgumentParser
import ResumeKit
import ResumeMarkup

/// Options of the commands that only look at tokens.
struct StateOptions: ParsableArguments {
    @Option(name: .customLong("state-dir"), help: "Where tokens live.")
    var stateDir: String?

    @Flag(help: "JSON output.")
    var json = false

    var store: TokenStore { TokenStore(directory: stateDir ?? TokenStore.defaultDirectory()) }
    var client: TransferClient { TransferClient(store: store, s3Answers: S3Responses(), htmlLinks: HTMLLinks()) }

    func load(_ reference: String) throws -> ResumeToken {
        do { return try client.loadToken(reference) } catch { throw Runner.fail(error, json: false) }
    }
}
