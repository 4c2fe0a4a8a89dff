import ArgumentParser
import Glibc
import ResumeKit

/// `resumectl serve …` hands over to the `resumectl-serve` binary installed beside this one, so that the
/// server's dependencies (NIO, and Foundation through swift-http-types) are never loaded by a transfer:
/// that keeps a download's memory about 10 MiB smaller.
struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract:
            "Serve a folder over HTTP(S): ranged downloads, resumable uploads (IETF draft, tus), logins, limits, a "
            + "folder page.",
        discussion:
            "The server is a program of its own, resumectl-serve: 'resumectl serve --help' (or 'man resumectl-serve') "
            + "lists its options."
    )

    @Argument(
        parsing: .captureForPassthrough,
        help: "The folder to serve, then the server's options ('resumectl serve --help').")
    var arguments: [String] = []

    func run() throws {
        try Self.execSibling("resumectl-serve", ["resumectl serve"] + arguments)
    }

    /// Becomes the program `name` in the same folder as the running `resumectl`, with `argv`.
    private static func execSibling(_ name: String, _ argv: [String]) throws -> Never {
        let me = Spawner.executable()
        let program = me.lastIndex(of: "/").map { String(me[..<$0]) + "/" + name } ?? name
        var cArgs = argv.map { strdup($0) } + [nil]
        execv(program, &cArgs)
        throw Runner.fail(
            TransferError(.inputMissing, "cannot run \(program): \(String(cString: strerror(errno)))"), json: false)
    }
}
