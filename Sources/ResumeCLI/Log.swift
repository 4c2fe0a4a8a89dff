import ArgumentParser
import Glibc
import ResumeKit

struct Log: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "log",
        abstract: "Print what a detached transfer wrote: NDJSON events and its stderr lines.",
        discussion: "--follow keeps printing until the transfer ends.")

    @Argument(help: "Token id.")
    var token: String

    @Flag(name: [.short, .long], help: "Print new lines as they come, until the transfer ends.")
    var follow = false

    @OptionGroup var state: StateOptions

    func run() async throws {
        let store = state.store
        let fd = token.contains("/") ? -1 : open(store.state.log(token), O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            let known = TransferState(id: token, store: store) != nil
            throw Runner.fail(
                TransferError(
                    .inputMissing,
                    known ? "\(token) has no log (only detached transfers keep one)" : "no log for '\(token)'"),
                json: false)
        }
        defer { close(fd) }
        await Jobs.follow(fd, id: token, store: store, until: follow) { Output.stdout($0) }
    }
}
