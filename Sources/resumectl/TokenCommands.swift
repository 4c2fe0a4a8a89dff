import ArgumentParser
import FoundationEssentials
import Glibc
import ResumeKit

/// Options of the commands that only look at tokens.
struct StateOptions: ParsableArguments {
    @Option(name: .customLong("state-dir"), help: "Where tokens live.")
    var stateDir: String?

    @Flag(help: "JSON output.")
    var json = false

    var store: TokenStore { TokenStore(directory: stateDir ?? TokenStore.defaultDirectory()) }
    var client: TransferClient { TransferClient(store: store) }

    func load(_ reference: String) throws -> ResumeToken {
        do { return try client.loadToken(reference) } catch { throw Runner.fail(error, json: false) }
    }
}

struct List: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List the transfers that can be resumed.")

    @OptionGroup var state: StateOptions

    func run() throws {
        let store = state.store
        let (tokens, broken) = store.all()
        if state.json {
            for token in tokens {
                Output.stdout(TokenSummary(token, store: store).json + "\n")
            }
        } else {
            for token in tokens {
                Output.stdout(TokenSummary(token, store: store).line + "\n")
            }
        }
        for (file, reason) in broken { Output.stderr("resumectl: skipped \(file): \(reason)\n") }
    }
}

struct Show: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print a token's JSON.")

    @Argument(help: "Token id or token file path.")
    var token: String

    @OptionGroup var state: StateOptions

    func run() throws {
        let loaded = try state.load(token)
        Output.stdout(TokenStore.json(loaded) + "\n")
    }
}

/// One row of `list`.
struct TokenSummary {
    let token: ResumeToken
    let state: String
    let committed: Int64
    let total: Int64?
    let location: String

    init(_ token: ResumeToken, store: TokenStore) {
        self.token = token
        if let pid = TokenLock.holder(path: store.lockPath(forID: token.id)) {
            state = "running(pid \(pid))"
        } else {
            state = "stopped"
        }
        if let d = token.download {
            committed = d.segments.map { $0.reduce(0) { $0 + $1.committed } } ?? d.committedBytes
            total = d.totalBytes
            location = d.path
        } else if let u = token.upload {
            committed = u.acknowledgedBytes
            total = u.source.size
            location = u.source.path
        } else {
            committed = 0
            total = nil
            location = ""
        }
    }

    var line: String {
        let expires = token.upload?.expires.map { "  expires \($0)" } ?? ""
        return "\(token.id)  \(token.kind.rawValue)  \(state)  \(committed)/\(total.map(String.init) ?? "?")  \(token.url)  \(location)\(expires)"
    }

    var json: String {
        JSONLine.encode([
            "id": token.id, "kind": token.kind.rawValue, "state": state, "committed": committed,
            "total": total, "url": token.url, "path": location, "protocol": token.upload?.protocolName,
            "expires": token.upload?.expires,
        ])
    }
}

struct Cancel: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Forget a transfer: remove its .part file (download) or DELETE the server's upload, then the token.")

    @Argument(help: "Token id or token file path.")
    var token: String

    @OptionGroup var state: StateOptions

    func run() async throws {
        let client = state.client
        let reference = token
        do {
            let message = try await client.cancel(reference)
            Output.stderr("resumectl: \(message)\n")
        } catch {
            throw Runner.fail(error, json: false)
        }
    }
}

struct Pause: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Stop a running transfer cleanly from any shell; it commits and exits 75.")

    @Argument(help: "Token id or token file path.")
    var token: String

    @Option(help: "Seconds to wait for the transfer to stop.")
    var wait: Double = 30

    @OptionGroup var state: StateOptions

    func run() throws {
        let store = state.store
        // A transfer younger than its first checkpoint has a lock but no token file yet.
        let id = token.contains("/") ? try state.load(token).id : token
        let lockPath = store.lockPath(forID: id)
        guard let pid = TokenLock.holder(path: lockPath) else {
            _ = try state.load(token)
            Output.stderr("resumectl: \(id) is not running\n")
            return
        }
        guard kill(pid, SIGTERM) == 0 else {
            throw Runner.fail(TransferError(.failed, "cannot signal pid \(pid): \(String(cString: strerror(errno)))"), json: false)
        }
        let deadline = Date().addingTimeInterval(wait)
        while TokenLock.holder(path: lockPath) != nil {
            if Date() > deadline {
                throw Runner.fail(TransferError(.busy, "pid \(pid) has not stopped after \(wait) s"), json: false)
            }
            usleep(20_000)
        }
        let committed = (try? store.load(id)).map { t in t.download?.committedBytes ?? t.upload?.acknowledgedBytes ?? 0 }
        if let committed {
            Output.stdout("\(committed)\n")
            Output.stderr("resumectl: paused \(id) at \(committed) bytes; resume with: resumectl resume \(id)\n")
        } else {
            Output.stderr("resumectl: \(id) finished before it could be paused\n")
        }
    }
}
