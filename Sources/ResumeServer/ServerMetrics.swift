import Synchronization

/// What `GET /.resumectl/metrics` reports, in Prometheus's text format (version 0.0.4).
///
/// Written by hand rather than with swift-prometheus and swift-metrics: the set is small and fixed,
/// the format is a few lines of text, and two more packages (and their global bootstrap) in the
/// server binary buy nothing here. The test reads the output with `prometheus_client`'s own parser.
/// Counters are plain atomics or short locks: the request path pays an add, never an allocation.
final class ServerMetrics: Sendable {
    /// The protocols an upload can use, as labels (tus, the IETF draft, a plain PUT or POST).
    static let protocols: [UploadRecord.Kind] = [.tus, .ietf, .plain]
    /// Methods reported by name; any other is `other` (a client must not grow the label set).
    static let methods = ["GET", "HEAD", "PUT", "POST", "PATCH", "DELETE", "OPTIONS"]

    let bytesReceived = Atomic<Int>(0)
    let bytesSent = Atomic<Int>(0)
    let s3LockConflicts = Atomic<Int>(0)
    /// Connections closed because a request body sent nothing for `--body-timeout`.
    let bodyTimeouts = Atomic<Int>(0)
    /// fdatasync of an upload's data and the durable write of its record, together.
    let durableSync = Histogram(bounds: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5])
    /// From a request's head to its response's end.
    let requestDuration = Histogram(bounds: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60])
    private let finished = Mutex<[UploadRecord.Kind: Int]>([:])
    private let requests = Mutex<[RequestKey: Int]>([:])
    private let s3Requests = Mutex<[String: Int]>([:])
    private let hooks = Mutex<[String: Int]>([:])

    private struct RequestKey: Hashable {
        var method: String
        var status: UInt
    }

    func uploadFinished(_ kind: UploadRecord.Kind) {
        finished.withLock { $0[kind, default: 0] += 1 }
    }

    func request(method: String, status: UInt, seconds: Double) {
        let name = Self.methods.contains(method) ? method : "other"
        requests.withLock { $0[RequestKey(method: name, status: status), default: 0] += 1 }
        requestDuration.observe(seconds)
    }

    func s3Request(method: String) {
        s3Requests.withLock { $0[method, default: 0] += 1 }
    }

    /// `result`: `ok`, `failed` or `timeout`.
    func hookRun(_ result: String) {
        hooks.withLock { $0[result, default: 0] += 1 }
    }

    /// The exposition; the gauges are read at the time of asking.
    func text(openConnections: Int, refusedConnections: Int, inProgress: [UploadRecord.Kind: Int]) -> String {
        var out = PrometheusText()
        out.family("resumectl_uploads_in_progress", "gauge", "Unfinished uploads this instance holds, by protocol.")
        for kind in Self.protocols {
            out.sample("resumectl_uploads_in_progress", ["protocol": kind.rawValue], inProgress[kind] ?? 0)
        }
        let finished = finished.withLock { $0 }
        out.family("resumectl_uploads_finished_total", "counter", "Uploads whose file was put in place, by protocol.")
        for kind in Self.protocols {
            out.sample("resumectl_uploads_finished_total", ["protocol": kind.rawValue], finished[kind] ?? 0)
        }
        out.family("resumectl_received_bytes_total", "counter", "Bytes read from connections (TLS records included).")
        out.sample("resumectl_received_bytes_total", [:], bytesReceived.load(ordering: .relaxed))
        out.family("resumectl_sent_bytes_total", "counter", "Bytes handed to connections to send.")
        out.sample("resumectl_sent_bytes_total", [:], bytesSent.load(ordering: .relaxed))
        out.family("resumectl_http_requests_total", "counter", "Answered requests, by method and status.")
        for (key, count) in requests.withLock({ $0 }).sorted(by: {
            ($0.key.method, $0.key.status) < ($1.key.method, $1.key.status)
        }) {
            out.sample("resumectl_http_requests_total", ["method": key.method, "status": String(key.status)], count)
        }
        out.histogram(
            "resumectl_http_request_duration_seconds", "From a request's head to the end of its answer.",
            requestDuration)
        out.histogram(
            "resumectl_durable_sync_seconds", "Making an upload's bytes and record durable (fdatasync, record write).",
            durableSync)
        out.family("resumectl_open_connections", "gauge", "Connections open now.")
        out.sample("resumectl_open_connections", [:], openConnections)
        out.family(
            "resumectl_body_timeouts_total", "counter",
            "Connections closed for a request body that sent nothing (--body-timeout).")
        out.sample("resumectl_body_timeouts_total", [:], bodyTimeouts.load(ordering: .relaxed))
        out.family(
            "resumectl_refused_connections_total", "counter", "Connections closed at once for --max-connections.")
        out.sample("resumectl_refused_connections_total", [:], refusedConnections)
        out.family("resumectl_s3_requests_total", "counter", "Requests the S3 store sent, by method.")
        for (method, count) in s3Requests.withLock({ $0 }).sorted(by: { $0.key < $1.key }) {
            out.sample("resumectl_s3_requests_total", ["method": method], count)
        }
        out.family(
            "resumectl_s3_lock_conflicts_total", "counter", "Upload locks on S3 another writer held (412 or 409).")
        out.sample("resumectl_s3_lock_conflicts_total", [:], s3LockConflicts.load(ordering: .relaxed))
        out.family(
            "resumectl_hook_runs_total", "counter", "--on-upload-complete runs, by result (ok, failed, timeout).")
        for (result, count) in hooks.withLock({ $0 }).sorted(by: { $0.key < $1.key }) {
            out.sample("resumectl_hook_runs_total", ["result": result], count)
        }
        return out.text
    }
}

/// A cumulative histogram with fixed bucket bounds, in seconds.
final class Histogram: Sendable {
    let bounds: [Double]
    private let state: Mutex<(buckets: [Int], sum: Double, count: Int)>

    init(bounds: [Double]) {
        self.bounds = bounds
        state = Mutex((Array(repeating: 0, count: bounds.count), 0, 0))
    }

    func observe(_ seconds: Double) {
        let index = bounds.firstIndex { seconds <= $0 }
        state.withLock { state in
            if let index { state.buckets[index] += 1 }
            state.sum += seconds
            state.count += 1
        }
    }

    /// Cumulative counts per bound, the sum and the count (the `+Inf` bucket).
    var snapshot: (cumulative: [Int], sum: Double, count: Int) {
        let (buckets, sum, count) = state.withLock { $0 }
        var running = 0
        return (
            buckets.map {
                running += $0; return running
            }, sum, count
        )
    }
}

/// Lines of the text format: `# HELP`, `# TYPE`, then samples with escaped label values.
private struct PrometheusText {
    var text = ""

    mutating func family(_ name: String, _ type: String, _ help: String) {
        text += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
    }

    mutating func sample(_ name: String, _ labels: [String: String], _ value: some CustomStringConvertible) {
        text += name
        if !labels.isEmpty {
            let pairs = labels.sorted { $0.key < $1.key }.map { "\($0.key)=\"\(Self.escape($0.value))\"" }
            text += "{" + pairs.joined(separator: ",") + "}"
        }
        text += " \(value)\n"
    }

    mutating func histogram(_ name: String, _ help: String, _ histogram: Histogram) {
        family(name, "histogram", help)
        let (cumulative, sum, count) = histogram.snapshot
        for (bound, value) in zip(histogram.bounds, cumulative) {
            sample(name + "_bucket", ["le": String(bound)], value)
        }
        sample(name + "_bucket", ["le": "+Inf"], count)
        sample(name + "_sum", [:], sum)
        sample(name + "_count", [:], count)
    }

    private static func escape(_ value: String) -> String {
        value.replacing("\\", with: "\\\\").replacing("\"", with: "\\\"").replacing("\n", with: "\\n")
    }
}
