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
    var client: TransferClient { TransferClient(store: store, s3Answers: S3Support.answers) }

    func load(_ reference: String) throws -> ResumeToken {
        do { return try client.loadToken(reference) } catch { throw Runner.fail(error, json: false) }
    }
}

struct List: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List transfers and their state: running (pid), scheduled, queued, waiting for network, paused, failed and resumable, failed.",
        discussion: "--all adds the transfers that ended in the last 7 days (done, failed, cancelled).")

    @Flag(help: "Also the transfers that ended (kept 7 days).")
    var all = false

    @OptionGroup var state: StateOptions

    func run() throws {
        let store = state.store
        let (tokens, broken) = store.all()
        // A folder upload's files are its batch's row, not rows of their own.
        var states = tokens.filter { $0.upload?.batch == nil }.compactMap { TransferState(id: $0.id, store: store, token: $0) }
        let batches = state.client.batchRecords()
        for b in batches { Output.stdout(BatchRow(b, client: state.client).text(json: state.json) + "\n") }
        if all {
            let known = Set(tokens.map(\.id) + batches.map(\.id))
            states += ResultStore(directory: store.directory).all().filter { !known.contains($0.id) }
                .compactMap { TransferState(id: $0.id, store: store) }
        }
        for s in states { Output.stdout((state.json ? TokenSummary(s).json : TokenSummary(s).line) + "\n") }
        for (file, reason) in broken { Output.stderr("resumectl: skipped \(file): \(reason)\n") }
    }
}

struct Show: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "show", abstract: "Print a token's JSON, or the record of a transfer that ended.")

    @Argument(help: "Token id or token file path.")
    var token: String

    @OptionGroup var state: StateOptions

    func run() throws {
        if let batch = state.client.batchRecord(token) {
            Output.stdout(batch.json + "\n")
            Output.stderr("resumectl: \(token): \(state.client.batchFinishedCount(token)) files finished so far\n")
            return
        }
        do {
            Output.stdout(TokenStore.json(try state.client.loadToken(token)) + "\n")
        } catch {
            guard error.code == .inputMissing, let record = state.client.record(token) else { throw Runner.fail(error, json: false) }
            Output.stdout(ResultStore.json(record) + "\n")
        }
    }
}

/// One row of `list`: ResumeKit's model of it, drawn as a line or a JSON object.
typealias TokenSummary = TransferRow

extension TransferRow {
    var stateText: String {
        switch state.phase {
        case .running(let pid, let phase):
            if phase == .scheduled, let at = state.live?.startAt { return "scheduled for \(Self.localTime(at)) (pid \(pid))" }
            return "\(phase.rawValue) (pid \(pid))"
        default:
            return state.phase.name
        }
    }

    var line: String {
        let pct = percent.map { Reporter.oneDecimal($0) + "%" } ?? "?%"
        let sizeText = size.map(Reporter.size) ?? "?"
        let rateText = rate.map { "  " + Reporter.size(Int64($0)) + "/s" } ?? ""
        let expires = state.token?.upload?.expires.map { "  expires \($0)" } ?? ""
        return "\(state.id)  \(kind)  \(stateText)  \(pct) of \(sizeText)\(rateText)  \(url)  \(location)\(expires)"
    }

    var json: String {
        var object: [String: (any JSONRepresentable)?] = [
            "id": state.id, "kind": kind, "state": state.phase.name, "pid": pid.map(Int.init), "committed": committed,
            "bytes": bytes, "total": size, "percent": percent, "rate": rate, "url": url, "path": location,
            "protocol": state.token?.upload?.uploadProtocol?.rawValue, "expires": state.token?.upload?.expires,
        ]
        if let stream = state.token?.upload?.stream { object["streamEnded"] = stream.ended }
        if let at = state.live?.startAt, state.live?.state == .scheduled { object["startAt"] = ISOTime.string(at) }
        if !state.isRunning, let record = state.record, state.token == nil || record.outcome != .done {
            object["exit"] = Int(record.exit)
            object["error"] = record.error
            object["endedAt"] = ISOTime.string(record.endedAt)
        }
        return JSONLine.encode(object)
    }

    static func localTime(_ date: Date) -> String {
        var t = time_t(date.timeIntervalSince1970)
        var tm = tm()
        localtime_r(&t, &tm)
        let two = { (v: Int32) in v < 10 ? "0\(v)" : "\(v)" }
        return "\(tm.tm_year + 1900)-\(two(tm.tm_mon + 1))-\(two(tm.tm_mday)) \(two(tm.tm_hour)):\(two(tm.tm_min)):\(two(tm.tm_sec))"
    }
}

struct Cancel: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cancel",
        abstract: "Forget a transfer: remove its .part file (download) or DELETE the server's upload, then the token.",
        discussion: "An S3 upload's multipart upload is aborted (AbortMultipartUpload), which frees its parts; --keep-parts leaves it on S3.")

    @Argument(help: "Token id or token file path.")
    var token: String

    @Flag(name: .customLong("keep-parts"), help: "S3: leave the multipart upload and its parts on S3 (no AbortMultipartUpload).")
    var keepParts = false

    @OptionGroup var state: StateOptions

    func run() async throws {
        let client = state.client
        let keepParts = self.keepParts
        let reference = token
        // A running (or scheduled, or detached) transfer is stopped first, as `pause` would.
        if let id = try? client.loadToken(reference).id,
            case .stillRunning(let pid) = Jobs.stop(id: id, store: client.store, within: 30)
        {
            throw Runner.fail(TransferError(.busy, "pid \(pid) has not stopped after 30 s"), json: false)
        }
        if client.batchRecord(reference) != nil {
            if case .stillRunning(let pid) = Jobs.stop(id: reference, store: client.store, within: 30) {
                throw Runner.fail(TransferError(.busy, "pid \(pid) has not stopped after 30 s"), json: false)
            }
            do { Output.stderr("resumectl: \(try await client.cancelBatch(reference, keepParts: keepParts))\n") } catch { throw Runner.fail(error, json: false) }
            return
        }
        do {
            let message = try await client.cancel(reference, keepParts: keepParts)
            Output.stderr("resumectl: \(message)\n")
        } catch where error.code == .inputMissing && !reference.contains("/") {
            // A finished transfer has nothing left to forget; only an id nothing knows is an error.
            guard let record = client.record(reference) else { throw Runner.fail(error, json: false) }
            Output.stderr("resumectl: \(reference) already ended (\(record.outcome.rawValue) at \(TokenSummary.localTime(record.endedAt))); nothing to cancel\n")
        } catch {
            throw Runner.fail(error, json: false)
        }
    }
}

struct Pause: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pause",
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
        switch Jobs.stop(id: id, store: store, within: wait) {
        case .notRunning:
            if state.client.batchRecord(id) != nil {
                Output.stderr("resumectl: \(id) is not running; resume with: resumectl resume \(id)\n")
                return
            }
            if !store.exists(id: id), let record = state.client.record(id) {
                Output.stderr("resumectl: \(id) already ended (\(record.outcome.rawValue) at \(TokenSummary.localTime(record.endedAt)))\n")
                return
            }
            _ = try state.load(token)
            Output.stderr("resumectl: \(id) is not running\n")
            return
        case .cannotSignal(let pid, let code):
            throw Runner.fail(TransferError(.failed, "cannot signal pid \(pid): \(String(cString: strerror(code)))"), json: false)
        case .stillRunning(let pid):
            throw Runner.fail(TransferError(.busy, "pid \(pid) has not stopped after \(wait) s"), json: false)
        case .stopped:
            break
        }
        if let batch = state.client.batchRecord(id) {
            Output.stderr("resumectl: paused \(batch.id) with \(state.client.batchFinishedCount(id)) files finished; resume with: resumectl resume \(id)\n")
            return
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
