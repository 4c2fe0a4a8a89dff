import Glibc
import ResumeKit
import Synchronization

/// Renders transfer events (a batch's: Reporter+Batch): a progress line on a terminal's stderr, or NDJSON on
/// stdout with `--json`. Scripts rely on this contract: stdout carries only the result line or JSON events.
final class Reporter: @unchecked Sendable {
    let json: Bool
    let quiet: Bool
    let showsProgress: Bool
    let lock = Mutex<Void>(())
    let tokenID: String
    /// A folder download's batch: each file's line is its path, its `started` event says `download`.
    let download: Bool
    /// For a list's file: whether `resume` knows the id (a token or a record) when an event is written. A file
    /// that ends before its first checkpoint gets no token: its events carry `"token": null`, never an id
    /// `resume` would reject.
    private let answers: (@Sendable (String) -> Bool)?
    private var lastLineLength = 0

    init(
        json: Bool, quiet: Bool, tokenID: String = "", answers: (@Sendable (String) -> Bool)? = nil,
        download: Bool = false
    ) {
        self.json = json
        self.quiet = quiet
        self.tokenID = tokenID
        self.answers = answers
        self.download = download
        showsProgress = !quiet && !json && isatty(2) != 0
    }

    /// The id to put in an event, or nil (JSON null) when nothing on disk answers to it.
    private var announcedID: String? {
        guard let answers else { return tokenID }
        return answers(tokenID) ? tokenID : nil
    }

    func handle(_ event: TransferEvent) {
        lock.withLock { _ in
            if json { emitJSON(event) } else { emitHuman(event) }
        }
    }

    /// The one stdout line of a success (not in `--json` mode, where `completed` says it).
    func result(_ line: String) {
        guard !json else { return }
        Output.stdout(line + "\n")
    }

    /// The one stderr line of a failure, plus the `failed` event with `--json`.
    func failure(_ error: TransferError) {
        lock.withLock { _ in
            if json {
                writeJSON([
                    "event": "failed", "token": error.tokenID ?? announcedID, "error": error.message,
                    "exit": Int(error.exitStatus), "resumable": error.isResumable,
                ])
            }
            // resumable: it has a token
            let hint = error.isResumable ? "; resume with: resumectl resume \(error.tokenID ?? "")" : ""
            say("resumectl: \(error.message)\(hint)")
        }
    }

    private func emitHuman(_ event: TransferEvent) {
        switch event {
        case .progress(let bytes, let total, let rate):
            guard showsProgress else { return }
            drawProgress(bytes: bytes, total: total, rate: rate)
        case .retry(let attempt, let delay, let error):
            note("\(error); retry \(attempt) in \(Self.oneDecimal(delay)) s")
        case .waitingForNetwork(let delay, let error):
            note("\(error); waiting for the network, next try in \(Self.oneDecimal(delay)) s")
        case .restarted(let reason):
            note("starting over: \(reason)")
        case .warning(let warning):
            clearProgress()
            Self.warnOnce(warning.message)
        case .note(let text):
            note(text)
        case .completed, .paused, .started:
            clearProgress()
        }
    }

    /// A line on stderr, unless `-q`.
    func note(_ text: String) {
        if !quiet { say("resumectl: \(text)") }
    }

    /// A line on stderr (or stdout), the progress line cleared first.
    func say(_ text: String, toStdout: Bool = false) {
        clearProgress()
        if toStdout { Output.stdout(text + "\n") } else { Output.stderr(text + "\n") }
    }

    private func drawProgress(bytes: Int64, total: Int64?, rate: Double) {
        var line: String
        if let total, total > 0 {
            let fraction = min(1, Double(bytes) / Double(total))
            let width = 24
            let filled = Int(fraction * Double(width))
            let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
            let percent = Self.oneDecimal(fraction * 100)
            line =
                "[\(bar)] \(String(repeating: " ", count: max(0, 5 - percent.count)))\(percent)% \(Self.size(bytes)) / "
                + "\(Self.size(total)) \(Self.size(Int64(rate)))/s"
            if rate > 0 {
                let eta = Double(total - bytes) / rate
                let seconds = Int(eta) % 60
                line += " ETA \(Int(eta) / 60):\(seconds < 10 ? "0" : "")\(seconds)"
            }
        } else {
            line = "\(Self.size(bytes)) \(Self.size(Int64(rate)))/s"
        }
        draw(line)
    }

    /// The progress line, drawn over the last one.
    func draw(_ line: String) {
        Output.stderr("\r" + line + String(repeating: " ", count: max(0, lastLineLength - line.count)))
        lastLineLength = line.count
    }

    private func clearProgress() {
        guard showsProgress, lastLineLength > 0 else { return }
        Output.stderr("\r" + String(repeating: " ", count: lastLineLength) + "\r")
        lastLineLength = 0
    }

    private func emitJSON(_ event: TransferEvent) {
        switch event {
        case .started(let kind, let url, let path, let offset, let total):
            writeJSON([
                "event": "started", "kind": kind.rawValue, "url": url, "path": path,
                "offset": offset, "total": total,
            ])
        case .progress(let bytes, let total, let rate):
            writeJSON(["event": "progress", "bytes": bytes, "total": total, "rate": Int64(rate)])
        case .retry(let attempt, let delay, let error):
            writeJSON(["event": "retry", "attempt": attempt, "delay": delay, "error": error])
        case .waitingForNetwork(let delay, let error):
            writeJSON(["event": "waiting", "delay": delay, "error": error])
        case .restarted(let reason):
            writeJSON(["event": "restarted", "reason": reason])
        case .paused(let offset):
            writeJSON(["event": "paused", "offset": offset])
        case .completed(let location, let bytes, let sha256):
            let key = location.hasPrefix("/") ? "path" : "url"
            writeJSON(["event": "completed", key: location, "bytes": bytes, "sha256": sha256])
        case .warning, .note:
            emitHuman(event)
        }
    }

    /// Warnings (TLS verification off …) reach stderr even with `-q`, once a run however many files it has.
    private static let warned = Mutex<Set<String>>([])

    private static func warnOnce(_ text: String) {
        let first = warned.withLock { $0.insert(text).inserted }
        if first { Output.stderr("resumectl: \(text)\n") }
    }

    /// An event; its `token` is the announced id unless it names one.
    func writeJSON(_ object: [String: (any JSONRepresentable)?]) {
        var object = object
        if object.index(forKey: "token") == nil { object.updateValue(announcedID, forKey: "token") }
        Output.stdout(JSONLine.encode(object) + "\n")
    }

    static func size(_ bytes: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(bytes)
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(bytes) B" : "\(oneDecimal(value)) \(units[unit])"
    }

    /// `12.3` for 12.34: Foundation's formatter is not worth loading for a progress line.
    static func oneDecimal(_ value: Double) -> String {
        let tenths = Int((value * 10).rounded())
        return "\(tenths / 10).\(tenths % 10)"
    }
}
