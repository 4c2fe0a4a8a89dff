import Foundation
import ResumeKit
import Testing

@testable import ResumeServer

/// `serve --store s3://` against moto's S3 server with signatures checked: the lock on S3 itself, and
/// uploads (IETF draft and tus, by `resumectl upload`) through three instances behind nginx round-robin,
/// cut by the fault proxy, one instance killed with SIGKILL mid-PATCH, and two clients racing.
@Suite("serve S3 store")
struct ServeS3StoreTests {
    static let MiB = 1 << 20

    static func client(_ moto: MotoServer, bucket: String, prefix: String, home: String) throws -> S3Client {
        let target = try S3Target(
            S3Location(bucket: bucket, key: prefix), choices: S3Choices(endpoint: moto.endpoint), forcePathStyle: false,
            environment: moto.environment(home: home))
        return S3Client(target: target)
    }

    /// The key of a lock object in the bucket, if one exists now (ListObjectsV2 without a prefix, in
    /// process: fast enough to catch a lock while a request holds it, on a loaded machine too).
    static func lockKey(_ s3: S3Client) -> String? {
        guard let page = try? s3.send("GET", key: "", query: [("list-type", "2")]), page.isSuccess,
            let objects = try? s3.answers.objects(page.body).objects
        else { return nil }
        return objects.first { $0.key.hasSuffix(".lock") }?.key
    }

    @Test(
        """
        the lock on moto: taken, busy for another instance, expired and taken over, lost by the old holder, released; \
        the probe finds conditional writes
        """
    )
    func lockOnMoto() async throws {
        let moto = try await MotoServer()
        try await moto.createBucket("locks")
        let home = try TempDirectory()
        let client = try Self.client(moto, bucket: "locks", prefix: "p/", home: home.path)
        let keys = S3UploadKeys(prefix: "p/")
        #expect(S3ConditionalProbe.run(client, keys: keys, instance: "probe") == .supported)
        let key = keys.lock("0123456789abcdef0123456789abcdef")
        let a = S3Lock(client: client, key: key, holder: "a", lifetime: 1500)
        let b = S3Lock(client: client, key: key, holder: "b", lifetime: 1500)
        #expect(a.acquire() == .held)
        #expect(a.mayWrite)
        guard case .busy(let grant) = b.acquire() else {
            Issue.record("b took a live lock")
            return
        }
        #expect(grant?.holder == "a")
        try await Task.sleep(for: .milliseconds(1700))
        #expect(!a.mayWrite)
        #expect(b.acquire() == .held, "an expired lock is taken over")
        #expect(a.renewIfDue() == .lost, "the old holder finds it lost at its next renewal")
        a.release()
        #expect(b.mayWrite, "the old holder's release deletes nothing of b's")
        b.release()
        let c = S3Lock(client: client, key: key, holder: "c", lifetime: 1500)
        #expect(c.acquire() == .held, "a released lock is free at once")
        c.release()
        #expect(try await moto.keys("locks").isEmpty)
    }

    @Test("--store with a malformed URL or no credentials: one line, exit 64")
    func badStore() async throws {
        let home = try TempDirectory()
        let r = try await runProcess(
            resumectlBinary, ["serve", "--store", "s3://x/", "--port", "0"],
            environment: MotoServer.baseEnvironment(home: home.path), inheritEnvironment: false)
        #expect(r.status == 64, "\(r)")
        #expect(r.stderr.split(separator: "\n").count == 1 && r.stderr.contains("--store"), "\(r)")
        let none = try await runProcess(
            resumectlBinary,
            ["serve", "--store", "s3://bucket/p/", "--endpoint-url", "http://127.0.0.1:9", "--port", "0"],
            environment: MotoServer.baseEnvironment(home: home.path), inheritEnvironment: false)
        #expect(none.status == 64 && none.stderr.contains("no AWS credentials"), "\(none)")
    }

    @Test(
        """
        an endpoint that ignores conditional writes (nginx dropping If-None-Match before moto) is refused at start: \
        one sentence, exit 64; --single-instance starts
        """
    )
    func endpointWithoutConditionalWrites() async throws {
        // Without signature checks: the header nginx drops was signed.
        let moto = try await MotoServer(verify: false)
        try await moto.createBucket("plain")
        let home = try TempDirectory()
        let nginx = try await NginxServer(
            root: home.path,
            serverDirectives: """
                client_max_body_size 0;
                location / {
                    proxy_pass http://127.0.0.1:\(moto.port);
                    proxy_set_header Host $http_host;
                    proxy_set_header If-None-Match "";
                }
                """)
        let args = ["serve", "--store", "s3://plain/p/", "--endpoint-url", nginx.baseURL, "--port", "0"]
        let refused = try await runProcess(
            resumectlBinary, args, environment: moto.environment(home: home.path), inheritEnvironment: false)
        #expect(refused.status == 64, "\(refused)")
        let lines = refused.stderr.split(separator: "\n")
        #expect(
            lines.count == 1 && lines[0].contains("ignores conditional writes")
                && lines[0].contains("--single-instance"), "\(refused)")
        let single = try RunningProcess(
            resumectlBinary, args + ["--single-instance"], environment: moto.environment(home: home.path),
            inheritEnvironment: false)
        defer { single.send(signal: SIGKILL) }
        _ = try await ServeProcess.listening(single, timeout: .seconds(60))
    }

    @Test(
        """
        resumectl upload through three instances behind nginx round-robin, cut five times: the object is the file, \
        every instance served
        """,
        arguments: ["ietf", "tus"])
    func throughThreeInstances(protocol name: String) async throws {
        let cluster = try await S3ServeCluster(instances: 3)
        let w = try Workspace()
        let size = 13 * Self.MiB + 12345
        let digest = try makeRandomFile(path: w.path("www/big.bin"), size: size, seed: name == "tus" ? 3401 : 3402)
        // Cuts until five were (a HEAD carries too little to be cut), then every connection passes.
        let plan = Fault.randomCuts(seed: 34, count: 50, direction: .upstream, bytes: 700_000...3_000_000)
            .map { $0.throttled(bytesPerSecond: 12_000_000) }
        let proxy = try FaultProxy(upstreamPort: cluster.nginx.port, plan: plan)
        let fifthCut = proxy.switchPlan(afterCuts: 5, to: [])
        defer { fifthCut.cancel() }
        let target = name == "tus" ? proxy.url(for: "in/") : proxy.url(for: "in/big.bin")
        let r = try await w.run(
            [
                "upload", w.path("www/big.bin"), target, "--protocol", name,
                "--retries", "100", "--retry-delay", "0.1",
            ], timeout: .seconds(240))
        let logs = (0..<3).map { cluster.requests($0) }
        #expect(r.status == 0, "\(r) \(logs)")
        #expect(try await cluster.moto.sha256(cluster.bucket, cluster.key("in/big.bin")) == digest)
        let cuts = proxy.connections.filter(\.triggered).count
        #expect(cuts >= 5, "\(proxy.connections)")
        for (index, log) in logs.enumerated() {
            #expect(!log.isEmpty, "instance \(index) served no request: \(logs)")
        }
        try await Self.expectOnlyOrphansOpen(cluster, logs: logs)
        // Served back through the balancer: a ranged GET with S3's ETag as the validator.
        let head = try await cluster.moto.head(cluster.bucket, cluster.key("in/big.bin"))
        let ranged = try await runProcess(
            "curl",
            [
                "-sS", "-D", "-", "-o", w.path("out/part"), "-r", "1000-1999",
                cluster.url + "/in/big.bin",
            ])
        #expect(ranged.stdout.contains("206") && ranged.stdout.contains(head.etag), "\(ranged)")
        let part = try Data(contentsOf: URL(fileURLWithPath: w.path("out/part")))
        let source = try FileHandle(forReadingFrom: URL(fileURLWithPath: w.path("www/big.bin")))
        try source.seek(toOffset: 1000)
        #expect(part == source.readData(ofLength: 1000))
    }

    @Test(
        "one instance killed with SIGKILL mid-PATCH and not restarted: the upload finishes through the others",
        arguments: ["ietf", "tus"])
    func instanceKilledMidPatch(protocol name: String) async throws {
        let cluster = try await S3ServeCluster(instances: 3)
        let w = try Workspace()
        let size = 13 * Self.MiB + 777
        let digest = try makeRandomFile(path: w.path("www/big.bin"), size: size, seed: name == "tus" ? 3403 : 3404)
        // One early cut, so that the IETF upload goes on by PATCH (its POST would carry the whole file).
        let proxy = try FaultProxy(upstreamPort: cluster.nginx.port, plan: [.cutAfterUpstream(bytes: 1_500_000)])
        let target = name == "tus" ? proxy.url(for: "in/") : proxy.url(for: "in/big.bin")
        let client = try w.start([
            "upload", w.path("www/big.bin"), target, "--protocol", name, "--limit-rate", "2M",
            "--retries", "200", "--retry-delay", "0.1",
        ])
        defer { client.send(signal: SIGKILL) }
        let s3 = try Self.client(cluster.moto, bucket: cluster.bucket, prefix: "inbox/", home: cluster.home.path)
        // The instance appending holds the upload's lock on S3: read the holder there, and kill that one.
        var victim: Int?
        let deadline = ContinuousClock.now + .seconds(90)
        while victim == nil && ContinuousClock.now < deadline {
            let resumed = (0..<3).contains { i in cluster.requests(i).contains { $0.hasPrefix("HEAD /") } }
            if resumed, let lock = Self.lockKey(s3),
                let held = try? s3.send("GET", key: lock), held.isSuccess,
                let grant = S3LockMachine.Grant(held.body), let index = cluster.ids.firstIndex(of: grant.holder)
            {
                victim = index
            } else {
                try await Task.sleep(for: .milliseconds(50))
            }
        }
        let killed = try #require(victim, "no instance was seen holding the upload's lock")
        let before = cluster.requests(killed).count
        cluster.instances[killed].send(signal: SIGKILL)
        let r = try await client.wait(timeout: .seconds(240))
        let logs = (0..<3).map { cluster.requests($0) }
        #expect(r.status == 0, "\(r) \(logs)")
        #expect(try await cluster.moto.sha256(cluster.bucket, cluster.key("in/big.bin")) == digest)
        #expect(!cluster.instances[killed].isRunning)
        #expect(cluster.requests(killed).count == before, "the killed instance logged nothing after")
        let survivors = (0..<3).filter { $0 != killed }
        #expect(survivors.contains { cluster.requests($0).contains { $0.hasPrefix("PATCH ") } }, "\(logs)")
        try await Self.expectOnlyOrphansOpen(cluster, logs: logs)
    }

    /// The upload finished left no multipart upload open. A creation cut before its answer named the
    /// upload leaves one its client never heard of (it creates anew); that one waits for its expiry.
    static func expectOnlyOrphansOpen(_ cluster: S3ServeCluster, logs: [[String]]) async throws {
        let creations = logs.joined().filter { $0.hasPrefix("POST /in/") }.count
        let open = try await cluster.moto.uploads(cluster.bucket).count
        #expect(open == creations - 1, "\(open) multipart uploads open after \(creations) creations: \(logs)")
    }

    /// A tus PATCH of `file` at offset 0; its status code.
    static func patch(_ url: String, file: String) async throws -> String {
        try await runProcess(
            "curl",
            [
                "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-X", "PATCH", "-H", "Tus-Resumable: 1.0.0",
                "-H", "Upload-Offset: 0", "-H", "Content-Type: application/offset+octet-stream",
                "--data-binary", "@" + file, url,
            ]
        ).stdout
    }

    @Test(
        """
        every instance killed with SIGKILL mid-PATCH and started again on its port: the upload continues from what S3 \
        holds
        """,
        arguments: ["ietf", "tus"])
    func allInstancesRestarted(protocol name: String) async throws {
        let cluster = try await S3ServeCluster(instances: 2)
        let w = try Workspace()
        let digest = try makeRandomFile(
            path: w.path("www/r.bin"), size: 13 * Self.MiB + 99, seed: name == "tus" ? 3415 : 3416)
        let target = name == "tus" ? cluster.url + "/in/" : cluster.url + "/in/r.bin"
        let client = try w.start([
            "upload", w.path("www/r.bin"), target, "--protocol", name, "--limit-rate", "1M",
            "--retries", "200", "--retry-delay", "0.1",
        ])
        defer { client.send(signal: SIGKILL) }
        let s3 = try Self.client(cluster.moto, bucket: cluster.bucket, prefix: "inbox/", home: cluster.home.path)
        let deadline = ContinuousClock.now + .seconds(60)
        while Self.lockKey(s3) == nil && client.isRunning && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        try await Task.sleep(for: .seconds(1))
        let runningAtRestart = client.isRunning
        for index in 0..<2 { try await cluster.restart(index) }
        let r = try await client.wait(timeout: .seconds(240))
        let logs = (0..<2).map { cluster.requests($0) }
        #expect(r.status == 0, "\(r) \(logs)")
        #expect(try await cluster.moto.sha256(cluster.bucket, cluster.key("in/r.bin")) == digest)
        #expect(runningAtRestart, "the upload was under way when every instance was killed")
        #expect(logs.joined().contains { $0.hasPrefix("PATCH ") }, "the new instances took the rest: \(logs)")
    }

    @Test(
        """
        two clients PATCH one upload at one offset through two instances at the same moment, 50 times: one is \
        refused, the object is the other's bytes
        """
    )
    func race() async throws {
        let cluster = try await S3ServeCluster(instances: 2)
        let w = try Workspace()
        let size = 256 * 1024
        _ = try makeRandomFile(path: w.path("www/a.bin"), size: size, seed: 3405)
        _ = try makeRandomFile(path: w.path("www/b.bin"), size: size, seed: 3406)
        let bodies = [
            try Data(contentsOf: URL(fileURLWithPath: w.path("www/a.bin"))),
            try Data(contentsOf: URL(fileURLWithPath: w.path("www/b.bin"))),
        ]
        var refusals: [String: Int] = [:]
        for round in 0..<50 {
            let urls = try await cluster.createTusUpload(through: round % 2, "/race/r\(round).bin", length: size)
            let files = [w.path("www/a.bin"), w.path("www/b.bin")]
            async let first = Self.patch(urls[0], file: files[0])
            async let second = Self.patch(urls[1], file: files[1])
            let codes = [try await first, try await second]
            let winners = codes.indices.filter { codes[$0] == "204" }
            #expect(winners.count == 1, "round \(round): \(codes)")
            guard winners.count == 1 else { continue }
            let loser = codes[1 - winners[0]]
            #expect(["409", "423", "404"].contains(loser), "round \(round): \(codes)")
            refusals[loser, default: 0] += 1
            let got = try await runProcess(
                "curl",
                [
                    "-sS", "-o", w.path("out/r\(round)"),
                    "http://127.0.0.1:\(cluster.ports[(round + 1) % 2])" + "/race/r\(round).bin",
                ])
            #expect(got.status == 0)
            #expect(
                try Data(contentsOf: URL(fileURLWithPath: w.path("out/r\(round)"))) == bodies[winners[0]],
                "round \(round)")
        }
        // The lock itself refused some (423): not every pair was settled by one finishing first.
        #expect((refusals["423"] ?? 0) > 0, "\(refusals)")
        print("serve S3 race refusals: \(refusals)")
    }

    @Test(
        """
        S3 failing to list an upload's parts to an instance that never saw it (nginx answers 503 in front of moto): \
        HEAD and PATCH are 503 with Retry-After, never 404
        """
    )
    func storeUnreadableIsNotGone() async throws {
        let cluster = try await S3ServeCluster(instances: 1)
        let nginx = try await NginxServer(
            root: cluster.home.path,
            serverDirectives: """
                client_max_body_size 0;
                location / {
                    set $fail "";
                    if ($request_method = GET) { set $fail "G"; }
                    if ($args ~ "uploadId=") { set $fail "${fail}U"; }
                    if ($fail = "GU") { return 503; }
                    proxy_pass http://127.0.0.1:\(cluster.moto.port);
                    proxy_set_header Host $http_host;
                }
                """)
        let (other, port, _) = try await S3ServeCluster.serve(
            moto: cluster.moto, bucket: cluster.bucket, home: cluster.home.path, extra: [], endpoint: nginx.baseURL)
        defer { other.send(signal: SIGKILL) }
        let first = "http://127.0.0.1:\(cluster.ports[0])"
        let created = try await CurlExchange.run([
            "-X", "POST", "-H", "Tus-Resumable: 1.0.0", "-H", "Upload-Length: 10", first + "/in/x.bin",
        ])
        let location = try #require(created["location"], "\(created.heads)")
        let path =
            location.hasPrefix("http") ? String(location.drop { $0 != "/" }.dropFirst(2).drop { $0 != "/" }) : location
        let head = try await CurlExchange.run(["-I", "-H", "Tus-Resumable: 1.0.0", "http://127.0.0.1:\(port)" + path])
        #expect(head.status == 503 && head["retry-after"] != nil, "\(head.heads)")
        let patch = try await CurlExchange.run([
            "-X", "PATCH", "-H", "Tus-Resumable: 1.0.0", "-H", "Upload-Offset: 0", "-H",
            "Content-Type: application/offset+octet-stream",
            "--data-binary", "0123456789", "http://127.0.0.1:\(port)" + path,
        ])
        #expect(patch.status == 503 && patch["retry-after"] != nil, "\(patch.heads)")
        #expect(other.stderrSoFar.contains("list the upload's parts"), "\(other.stderrSoFar)")
        // The upload is there all along, at offset 0, for the instance that reads S3 directly.
        let direct = try await CurlExchange.run(["-I", "-H", "Tus-Resumable: 1.0.0", first + path])
        #expect(direct.status == 200 && direct["upload-offset"] == "0", "\(direct.heads)")
    }

    @Test("--single-instance: no lock objects, no probe; an upload cut by the proxy still lands whole")
    func singleInstance() async throws {
        let cluster = try await S3ServeCluster(instances: 1, extra: ["--single-instance"])
        let w = try Workspace()
        let digest = try makeRandomFile(path: w.path("www/s.bin"), size: 11 * Self.MiB + 1, seed: 3413)
        let proxy = try FaultProxy(
            upstreamPort: cluster.ports[0],
            plan: [.cutAfterUpstream(bytes: 2_000_000), .cutAfterUpstream(bytes: 3_000_000)])
        let r = try await w.run([
            "upload", w.path("www/s.bin"), proxy.url(for: "in/s.bin"), "--retries", "20", "--retry-delay", "0.1",
        ])
        #expect(r.status == 0, "\(r) \(cluster.instances[0].stderrSoFar)")
        #expect(try await cluster.moto.sha256(cluster.bucket, cluster.key("in/s.bin")) == digest)
        #expect(proxy.connections.filter(\.triggered).count >= 1, "\(proxy.connections)")
        let keys = try await cluster.moto.keys(cluster.bucket)
        #expect(!keys.contains { $0.hasSuffix(".lock") || $0.contains("probe-") }, "\(keys)")
    }

    @Test(
        """
        a slow upload outlives several lifetimes of its lock (--lock-seconds 3): renewed on a timer while it writes, \
        never out on S3 for long, never refused
        """
    )
    func lockRenewedWhileWriting() async throws {
        let cluster = try await S3ServeCluster(instances: 2, extra: ["--lock-seconds", "3"])
        let w = try Workspace()
        let digest = try makeRandomFile(path: w.path("www/slow.bin"), size: 12 * Self.MiB, seed: 3414)
        let client = try w.start([
            "upload", w.path("www/slow.bin"), cluster.url + "/in/slow.bin", "--limit-rate", "1M",
            "--retries", "3",
        ])
        defer { client.send(signal: SIGKILL) }
        let s3 = try Self.client(cluster.moto, bucket: cluster.bucket, prefix: "inbox/", home: cluster.home.path)
        var lockKey: String?
        while lockKey == nil && client.isRunning {
            lockKey = Self.lockKey(s3)
            try await Task.sleep(for: .milliseconds(50))
        }
        // Sampled from S3 while the request writes: the grant never lies in the past by more than a
        // loaded machine's delay (a 5 MiB part takes 5 s at 1 MB/s, longer than the lock lives, so
        // renewing only when a part starts would let it lapse by 2 s before each part).
        var samples = 0
        var expired: [Int64] = []
        while let key = lockKey, client.isRunning {
            if let held = try? s3.send("GET", key: key), held.isSuccess, let grant = S3LockMachine.Grant(held.body) {
                samples += 1
                let late = WallClock.millis() - grant.expires
                if late > 0 { expired.append(late) }
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        let r = try await client.wait(timeout: .seconds(120))
        let logs = (0..<2).map { cluster.requests($0) }
        #expect(r.status == 0, "\(r) \(logs)")
        #expect(try await cluster.moto.sha256(cluster.bucket, cluster.key("in/slow.bin")) == digest)
        #expect(samples >= 10, "\(samples) samples of the lock")
        #expect(
            expired.allSatisfy { $0 < 1000 },
            "the lock had run out by \(expired) ms in \(expired.count) of \(samples) samples")
        #expect(!logs.joined().contains { $0.contains(" 409 ") || $0.contains(" 423 ") }, "\(logs)")
    }

    @Test(
        """
        tuspy in 1 MiB PATCHes and the folder page in headless chromium, through the balancer over three instances: \
        both objects are their files
        """
    )
    func otherClientsThroughTheBalancer() async throws {
        let cluster = try await S3ServeCluster(instances: 3)
        let w = try Workspace()
        let tusDigest = try makeRandomFile(path: w.path("www/t.bin"), size: 7 * Self.MiB + 5, seed: 3409)
        let pageDigest = try makeRandomFile(path: w.path("www/p.bin"), size: 6 * Self.MiB + 9, seed: 3410)
        let tuspy = """
            import sys
            from tusclient import client
            c = client.TusClient(sys.argv[1])
            u = c.uploader(sys.argv[2], chunk_size=1 << 20, metadata={"filename": "t.bin", "filetype": \
            "application/octet-stream"},
                           retries=10, retry_delay=1)
            u.upload()
            """
        let t = try await runProcess(
            "python3", ["-c", tuspy, cluster.url + "/in/", w.path("www/t.bin")], timeout: .seconds(180))
        #expect(t.status == 0, "tuspy (make deps installs it): \(t)")
        #expect(try await cluster.moto.sha256(cluster.bucket, cluster.key("in/t.bin")) == tusDigest)
        let page = try await runProcess(
            "python3", [ServeFolderPageTests.browser, "finish", cluster.url + "/in/", w.path("www/p.bin")],
            timeout: .seconds(300))
        let line = try #require(
            page.stdoutLines.last, "chromium, chromium-driver and selenium (make deps installs them): \(page)")
        #expect(line.contains("\"done\""), "\(page)")
        #expect(try await cluster.moto.sha256(cluster.bucket, cluster.key("in/p.bin")) == pageDigest)
        let patches = (0..<3).map { i in cluster.requests(i).filter { $0.hasPrefix("PATCH ") }.count }
        #expect(patches.allSatisfy { $0 > 0 }, "every instance took PATCHes: \(patches)")
        #expect(try await cluster.moto.uploads(cluster.bucket).isEmpty)
    }
}
