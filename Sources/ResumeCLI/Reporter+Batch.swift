import ResumeKit

/// A batch's events: a progress line on a terminal's stderr and a stdout line per file that arrived, or with
/// `--json` events on stdout, each with the batch id as `token` and, for a file, `path` and `url`.
extension Reporter {
    func handle(_ event: BatchEvent) {
        lock.withLock { _ in
            switch event {
            case .announced(let id, let files, let bytes):
                if json {
                    writeJSON(["event": "started", "kind": "batch", "files": files, "total": bytes])
                } else {
                    note("batch \(id): \(files) files, \(Self.size(bytes))")
                }
            case .leftOut(let text) where json && download:
                writeJSON(["event": "skipped", "reason": text])
            case .leftOut(let text):
                say("resumectl: \(text)")
            case .planned(let action):
                if json { writeJSON(Self.planEvent(action)) }
            case .progress(let files, let of, let bytes, let total):
                if json {
                    writeJSON(["event": "progress", "files": files, "of": of, "bytes": bytes, "total": total])
                } else if showsProgress {
                    draw("files \(files)/\(of)  \(Self.size(bytes)) / \(Self.size(total))")
                }
            case .transfer(let file, let event):
                transfer(file, event)
            case .note(let text):
                note(text)
            case .file(let file, let event):
                fileEvent(file, event)
            }
        }
    }

    private func fileEvent(_ file: BatchFile, _ event: BatchFileEvent) {
        var object: [String: (any JSONRepresentable)?]
        switch event {
        case .started:
            object = ["event": "started", "kind": download ? "download" : "upload"]
        case .completed(let bytes):
            object = ["event": "completed", "bytes": bytes]
            if !json { say(download ? file.path : file.target, toStdout: true) }
        case .skipped(let reason):
            object = ["event": "skipped", "reason": reason]
        case .restarted(let reason):
            object = ["event": "restarted", "reason": reason]
            if !json { note("starting over: \(reason)") }
        case .deleted:
            object = ["event": "deleted"]
            if !json { note("deleted \(download ? file.path : file.target)") }
        case .failed(let error):
            object = [
                "event": "failed", "error": error.message, "exit": Int(error.exitStatus),
                "resumable": error.isResumable,
            ]
            say(
                download
                    ? "resumectl: \(file.target) → \(file.path): \(error.message)"
                    : "resumectl: \(file.path) → \(file.target): \(error.message)")
        }
        guard json else { return }
        object["path"] = file.path
        object["url"] = file.target
        writeJSON(object)
    }

    private func transfer(_ file: BatchFile, _ event: TransferEvent) {
        switch event {
        case .retry(let attempt, let delay, let error):
            if json {
                writeJSON([
                    "event": "retry", "path": file.path, "url": file.target, "attempt": attempt, "delay": delay,
                    "error": error,
                ])
            } else {
                note("\(file.path): \(error); retry \(attempt) in \(Self.oneDecimal(delay)) s")
            }
        case .restarted(let reason):
            if json { writeJSON(["event": "restarted", "path": file.path, "url": file.target, "reason": reason]) }
        case .note(let text) where text.hasPrefix("warning: "):
            say("resumectl: \(text)")
        default:
            break
        }
    }

    /// A sync's action as its `--json` event; its path is below both sides' folders.
    static func planEvent(_ action: SyncAction) -> [String: (any JSONRepresentable)?] {
        ["event": "plan", "action": action.kind.rawValue, "path": action.path, "reason": action.reason]
    }

    /// The final `batch` event (with `--json`) and, unless every file arrived, the line that says what to do.
    func summary(_ s: BatchSummary) {
        lock.withLock { _ in
            if json {
                writeJSON([
                    "event": "batch", "files": s.files, "sent": s.sent, "skipped": s.skipped, "failed": s.failed.count,
                    "bytes": s.bytes, "exit": Int(s.exitStatus), "resumable": s.exitStatus != 0 && s.isResumable,
                ])
            }
            let counts =
                "\(download ? "fetched" : "sent") \(s.sent), skipped \(s.skipped), failed \(s.failed.count) of "
                + "\(s.files) files"
            if let stopped = s.stopped {
                say("resumectl: \(stopped.message) (\(counts)); resume with: resumectl resume \(tokenID)")
            } else if !s.failed.isEmpty {
                say("resumectl: batch \(tokenID): \(counts); resume with: resumectl resume \(tokenID)")
            } else {
                note("batch \(tokenID): \(counts)")
            }
        }
    }
}
