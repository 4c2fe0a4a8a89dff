import ResumeKit

/// One row of `list` for an unfinished folder upload (`b-…`).
struct BatchRow {
    let record: BatchRecord
    let state: String
    let finished: Int
    let pid: Int?

    init(_ record: BatchRecord, client: TransferClient) {
        self.record = record
        let current = TransferState(id: record.id, store: client.store)
        state = current.map { TransferRow($0).stateText } ?? "failed and resumable"
        if case .running(let pid, _)? = current?.phase { self.pid = Int(pid) } else { pid = nil }
        finished = client.batchFinishedCount(record.id)
    }

    func text(json: Bool) -> String {
        guard json else { return "\(record.id)  batch  \(state)  \(finished) files finished  \(Redact.url(record.target))  \(record.folder)" }
        return JSONLine.encode(["id": record.id, "kind": "batch", "state": state, "pid": pid, "finished": finished,
            "url": Redact.url(record.target), "path": record.folder])
    }
}
