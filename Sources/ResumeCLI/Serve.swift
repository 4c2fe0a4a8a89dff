import ArgumentParser
import Glibc
import ResumeKit

/// `resumectl serve …` hands over to the `resumectl-serve` binary installed beside this one, so that the
/// server's dependencies (NIO, and Foundation through swift-http-types) are never loaded by a transfer:
/// that keeps a download's memory about 10 MiB smaller.
struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve", _superCommandName: Resumectl.name,
        abstract: "Serve a folder over HTTP(S): ranged downloads, resumable uploads (IETF draft, tus), logins, limits, a folder page.",
        discussion: "The server is a program of its own, resumectl-serve: 'resumectl serve --help' (or 'man resumectl-serve') lists its options.")

    @Argument(parsing: .captureForPassthrough, help: "The folder to serve, then the server's options ('resumectl serve --help').")
    var arguments: [String] = []

    func run() throws {
        let server = Self.siblingPath("resumectl-serve")
        let argv = ["resumectl serve"] + arguments
        var cArgs = argv.map { strdup($0) } + [nil]
        execv(server, &cArgs)
        throw Runner.fail(TransferError(.inputMissing, "cannot run \(server): \(String(cString: strerror(errno)))"), json: false)
    }

    /// A program in the same folder as the running `resumectl`.
    static func siblingPath(_ name: String) -> String {
        let me = Spawner.executable()
        guard let slash = me.lastIndex(of: "/") else { return name }
        return String(me[..<slash]) + "/" + name
    }
}
