import Glibc
import ResumeKit
import Synchronization

/// Renders a batch's events: a progress line on a terminal's stderr and a stdout line per file that arrived,
/// or with `--json` events on stdout, each with the batch id as `token` and, for a file, `path` and `url`.
final class BatchReporter: Sendable {
    private let json: Bool
    private let quiet: Bool
    private let showsProgress: Bool
    private let line = Mutex(0)
    let id: String
    /// A folder download: each file's line is its path, its `started` event says `download`.
    private let download: Bool

    init(json: Bool, quiet: Bool, id: String, download: Bool = false) {
        self.json = json
        self.quiet = quiet
        self.id = id
        self.download = download
        showsProgress = !quiet && !json && isatty(2) != 0
    }

    func handle(_ event: BatchEvent) {
        switch event {
        case .announced(let id, let files, let bytes):
            if json {
                write(["event": "started", "kind": "batch", "files": files, "total": bytes])
            } else if !quiet {
                stderr("resumectl: batch \(id): \(files) files, \(Reporter.size(bytes))")
            }
        case .leftOut(let text) where json && download:
            write(["event": "skipped", "reason": text])
        case .leftOut(let text):
            stderr("resumectl: \(text)")
        case .progress(let files, let of, let bytes, let total):
            if json {
                write(["event": "progress", "files": files, "of": of, "bytes": bytes, "total": total])
            } else if showsProgress {
                draw("files \(files)/\(of)  \(Reporter.size(bytes)) / \(Reporter.size(total))")
            }
        case .transfer(let file, let event):
            transfer(file, event)
        case .file(let file, let event):
            fileEvent(file, event)
        }
    }

    private func fileEvent(_ file: BatchFile, _ event: BatchFileEvent) {
        var object: [String: (any JSONRepresentable)?]
        switch event {
        case .started:
            object = ["event": "started", "kind": download ? "download" : "upload"]
        case .completed(let bytes):
            object = ["event": "completed", "bytes": bytes]
            if !json { stdout(download ? file.path : file.target) }
        case .skipped(let reason):
            object = ["event": "skipped", "reason": reason]
        case .restarted(let reason):
            object = ["event": "restarted", "reason": reason]
            if !json, !quiet { stderr("resumectl: starting over: \(reason)") }
        case .failed(let error):
            object = ["event": "failed", "error": error.message, "exit": Int(error.exitStatus), "resumable": error.isResumable]
            stderr(download ? "resumectl: \(file.target) → \(file.path): \(error.message)" : "resumectl: \(file.path) → \(file.target): \(error.message)")
        }
        guard json else { return }
        object["path"] = file.path
        object["url"] = file.target
        write(object)
    }

    private func transfer(_ file: BatchFile, _ event: TransferEvent) {
        switch event {
        case .retry(let attempt, let delay, let error):
            if json {
                write(["event": "retry", "path": file.path, "url": file.target, "attempt": attempt, "delay": delay, "error": error])
            } else if !quiet {
                stderr("resumectl: \(file.path): \(error); retry \(attempt) in \(Reporter.oneDecimal(delay)) s")
            }
        case .restarted(let reason):
            if json { write(["event": "restarted", "path": file.path, "url": file.target, "reason": reason]) }
        case .note(let text) where text.hasPrefix("warning: "):
            stderr("resumectl: \(text)")
        default:
            break
        }
    }

    /// The final `batch` event (with `--json`) and, unless every file arrived, the line that says what to do.
    func summary(_ s: BatchSummary) {
        if json {
            write(["event": "batch", "files": s.files, "sent": s.sent, "skipped": s.skipped, "failed": s.failed.count,
                "bytes": s.bytes, "exit": Int(s.exitStatus), "resumable": s.exitStatus != 0 && s.isResumable])
        }
        let counts = "\(download ? "fetched" : "sent") \(s.sent), skipped \(s.skipped), failed \(s.failed.count) of \(s.files) files"
        if let stopped = s.stopped {
            stderr("resumectl: \(stopped.message) (\(counts)); resume with: resumectl resume \(id)")
        } else if !s.failed.isEmpty {
            stderr("resumectl: batch \(id): \(counts); resume with: resumectl resume \(id)")
        } else if !quiet {
            stderr("resumectl: batch \(id): \(counts)")
        }
    }

    private func write(_ object: [String: (any JSONRepresentable)?]) {
        var object = object
        object["token"] = id
        Output.stdout(JSONLine.encode(object) + "\n")
    }

    private func draw(_ text: String) {
        line.withLock { last in
            Output.stderr("\r" + text + String(repeating: " ", count: max(0, last - text.count)))
            last = text.count
        }
    }

    private func clear() {
        guard showsProgress else { return }
        line.withLock { last in
            if last > 0 { Output.stderr("\r" + String(repeating: " ", count: last) + "\r") }
            last = 0
        }
    }

    private func stdout(_ text: String) {
        clear()
        Output.stdout(text + "\n")
    }

    private func stderr(_ text: String) {
        clear()
        Output.stderr(text + "\n")
    }
}
