import Foundation
import Testing

/// `GET /.resumectl/metrics`: Prometheus's text format, read by `prometheus_client`'s own parser (PyPI),
/// after uploads over each protocol and a download; who may read it.
@Suite("serve metrics")
struct ServeMetricsTests {
    /// One metric family as `prometheus_client` parsed it.
    struct Family {
        var type: String
        var samples: [(name: String, labels: [String: String], value: Double)]

        func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
            samples.first { $0.name == name && $0.labels == labels }?.value
        }
    }

    static let parser = """
        import base64, json, sys, urllib.request
        from prometheus_client.parser import text_string_to_metric_families
        request = urllib.request.Request(sys.argv[1])
        if len(sys.argv) > 2:
            request.add_header("Authorization", "Basic " + base64.b64encode(sys.argv[2].encode()).decode())
        with urllib.request.urlopen(request) as answer:
            kind, text = answer.headers["Content-Type"], answer.read().decode()
        families = {f.name: {"type": f.type, "samples": [[s.name, s.labels, s.value] for s in f.samples]}
                    for f in text_string_to_metric_families(text)}
        print(json.dumps({"content_type": kind, "families": families}))
        """

    /// The metrics of the server at `port`, parsed by prometheus_client; and the answer's Content-Type.
    static func scrape(port: Int, login: String? = nil) async throws -> ([String: Family], String) {
        let r = try await runProcess(
            "python3", ["-c", parser, "http://127.0.0.1:\(port)/.resumectl/metrics"] + (login.map { [$0] } ?? []))
        try #require(r.status == 0, "prometheus_client (make deps installs it) parses the metrics: \(r)")
        let top = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        let raw = try #require(top["families"] as? [String: [String: Any]])
        var families: [String: Family] = [:]
        for (name, family) in raw {
            let samples = (family["samples"] as? [[Any]] ?? []).map { sample in
                (
                    name: sample[0] as? String ?? "", labels: sample[1] as? [String: String] ?? [:],
                    value: (sample[2] as? NSNumber)?.doubleValue ?? .nan
                )
            }
            families[name] = Family(type: family["type"] as? String ?? "", samples: samples)
        }
        return (families, top["content_type"] as? String ?? "")
    }

    @Test("after a tus, an IETF and a plain upload and a download, the parsed metrics count each of them")
    func countsParsed() async throws {
        let w = try Workspace()
        let folder = try w.dir.subdirectory("served")
        try FileManager.default.createDirectory(atPath: folder + "/in", withIntermediateDirectories: true)
        let (serve, port) = try await ServeProcess.start(folder: folder)
        defer { serve.send(signal: SIGKILL) }
        let base = "http://127.0.0.1:\(port)"
        let sizes = [1 << 20, 3 << 20, 200_000]
        for (index, size) in sizes.enumerated() {
            _ = try makeRandomFile(path: w.path("www/f\(index).bin"), size: size, seed: UInt64(4710 + index))
        }
        let tus = try await w.run(["upload", w.path("www/f0.bin"), base + "/in/", "--protocol", "tus"])
        #expect(tus.status == 0, "\(tus)")
        let ietf = try await w.run(["upload", w.path("www/f1.bin"), base + "/in/f1.bin", "--protocol", "ietf"])
        #expect(ietf.status == 0, "\(ietf)")
        let plain = try await CurlExchange.run(["-T", w.path("www/f2.bin"), base + "/in/f2.bin"])
        #expect(plain.status == 201)
        let download = try await CurlExchange.run([base + "/in/f1.bin"])
        #expect(download.status == 200 && download.body.count == sizes[1])

        let (metrics, contentType) = try await Self.scrape(port: port)
        #expect(contentType.hasPrefix("text/plain; version=0.0.4"))
        let finished = try #require(metrics["resumectl_uploads_finished"], "\(metrics.keys.sorted())")
        #expect(finished.type == "counter")
        for kind in ["tus", "ietf", "plain"] {
            #expect(
                finished.value("resumectl_uploads_finished_total", ["protocol": kind]) == 1,
                "\(kind): \(finished.samples)")
            #expect(
                metrics["resumectl_uploads_in_progress"]?.value("resumectl_uploads_in_progress", ["protocol": kind])
                    == 0)
        }
        let received = try #require(metrics["resumectl_received_bytes"]?.value("resumectl_received_bytes_total"))
        #expect(received >= Double(sizes.reduce(0, +)))
        let sent = try #require(metrics["resumectl_sent_bytes"]?.value("resumectl_sent_bytes_total"))
        #expect(sent >= Double(sizes[1]))
        let requests = try #require(metrics["resumectl_http_requests"])
        #expect(
            (requests.value("resumectl_http_requests_total", ["method": "PUT", "status": "201"]) ?? 0) >= 1,
            "\(requests.samples)")
        #expect(
            (requests.value("resumectl_http_requests_total", ["method": "GET", "status": "200"]) ?? 0) >= 1,
            "\(requests.samples)")
        let latency = try #require(metrics["resumectl_http_request_duration_seconds"])
        #expect(latency.type == "histogram")
        #expect((latency.value("resumectl_http_request_duration_seconds_count") ?? 0) >= 4)
        #expect(
            latency.value("resumectl_http_request_duration_seconds_bucket", ["le": "+Inf"])
                == latency.value("resumectl_http_request_duration_seconds_count"))
        let sync = try #require(metrics["resumectl_durable_sync_seconds"])
        #expect(
            sync.type == "histogram" && (sync.value("resumectl_durable_sync_seconds_count") ?? 0) >= 2,
            "\(sync.samples)")
        #expect((metrics["resumectl_open_connections"]?.value("resumectl_open_connections") ?? 0) >= 1)
        #expect(metrics["resumectl_s3_requests"]?.type == "counter")
        #expect(metrics["resumectl_s3_lock_conflicts"]?.value("resumectl_s3_lock_conflicts_total") == 0)
    }

    @Test(
        """
        --store s3:// on moto, two instances racing PATCHes on one upload: the S3 requests and the lock's conflicts \
        are counted
        """
    )
    func s3Store() async throws {
        let cluster = try await S3ServeCluster(instances: 2)
        let w = try Workspace()
        let size = 64 * 1024
        _ = try makeRandomFile(path: w.path("www/a.bin"), size: size, seed: 4730)
        var sawLockRefusal = false
        for round in 0..<50 where !sawLockRefusal {
            let urls = try await cluster.createTusUpload(through: round % 2, "/race/r\(round).bin", length: size)
            let file = w.path("www/a.bin")
            async let first = ServeS3StoreTests.patch(urls[0], file: file)
            async let second = ServeS3StoreTests.patch(urls[1], file: file)
            // 423: the lock was another instance's (its conditional create was refused).
            sawLockRefusal = [try await first, try await second].contains("423")
        }
        #expect(sawLockRefusal, "in 50 rounds, one PATCH found the other's lock")
        var conflicts = 0.0
        var finished = 0.0
        var requests: [String: Double] = [:]
        for port in cluster.ports {
            let (metrics, _) = try await Self.scrape(port: port)
            conflicts += metrics["resumectl_s3_lock_conflicts"]?.value("resumectl_s3_lock_conflicts_total") ?? 0
            for sample in metrics["resumectl_s3_requests"]?.samples ?? [] {
                requests[sample.labels["method"] ?? "", default: 0] += sample.value
            }
            finished +=
                metrics["resumectl_uploads_finished"]?.value("resumectl_uploads_finished_total", ["protocol": "tus"])
                ?? 0
        }
        #expect(conflicts >= 1, "\(conflicts)")
        #expect(finished >= 1, "each round's upload was finished by one of them")
        #expect(
            (requests["PUT"] ?? 0) >= 1 && (requests["POST"] ?? 0) >= 1 && (requests["GET"] ?? 0) >= 1, "\(requests)")
    }

    @Test(
        "with --htpasswd the metrics need a login (also with --public-read) unless --metrics-public; --no-metrics: 404")
    func access() async throws {
        let w = try Workspace()
        let htpasswd = try await ServeLoginTests.passwordFile(w)
        let folder = try w.dir.subdirectory("served")
        let cases: [([String], anonymous: Int)] = [
            (["--htpasswd", htpasswd], 401),
            (["--htpasswd", htpasswd, "--public-read"], 401),
            (["--htpasswd", htpasswd, "--metrics-public"], 200),
            (["--no-metrics"], 404),
        ]
        for (options, anonymous) in cases {
            let (serve, port) = try await ServeProcess.start(folder: folder, options)
            defer { serve.send(signal: SIGKILL) }
            let url = "http://127.0.0.1:\(port)/.resumectl/metrics"
            #expect(try await CurlExchange.run([url]).status == anonymous, "\(options)")
            if options.contains("--htpasswd") {
                #expect(try await CurlExchange.run(["-u", "alice:bcrypt secret", url]).status == 200, "\(options)")
                let (metrics, _) = try await Self.scrape(port: port, login: "alice:bcrypt secret")
                #expect(metrics["resumectl_open_connections"]?.type == "gauge")
            }
        }
    }
}
