import FoundationEssentials
import Glibc
import ResumeKit

/// One row of `list`: ResumeKit's model of it, drawn as a line or a JSON object.
extension TransferRow {
    var stateText: String {
        switch state.phase {
        case .running(let pid, let phase):
            if phase == .scheduled, let at = state.live?.startAt {
                return "scheduled for \(Self.localTime(at)) (pid \(pid))"
            }
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
        if let concat = state.token?.upload?.concat { object["partials"] = concat.partials.count }
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
        return
            "\(tm.tm_year + 1900)-\(two(tm.tm_mon + 1))-\(two(tm.tm_mday)) "
            + "\(two(tm.tm_hour)):\(two(tm.tm_min)):\(two(tm.tm_sec))"
    }
}
