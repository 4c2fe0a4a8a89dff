import Crypto
import Foundation
import Testing

/// `resumectl upload FILE s3://BUCKET/KEY` and `download s3://…` against moto's S3 server with SigV4
/// verification on (a wrong signature is refused), through the cutting proxy where a fault is needed.
/// One server for the whole suite, one bucket per test, so tests run in parallel.
/// The kill -9 scenarios are in `S3CrashTests`, which must run serially (Makefile TIMED_SUITES).
@Suite struct S3Tests {
    static let MiB = 1 << 20

    /// The peer itself: it refuses a wrong signature, takes curl's SigV4 multipart upload, and the boto3
    /// helpers the other tests rely on see what they should. Passes without any S3 support in resumectl.
    @Test func thePeerChecksSignaturesAndTheHelpersWork() async throws {
        let s = try await S3Scene()
        func curl(_ args: [String], secret: String? = nil) async throws -> ProcessResult {
            try await runProcess(
                curlBinary,
                [
                    "-sS", "--aws-sigv4", "aws:amz:us-east-1:s3", "-u",
                    "\(s.moto.accessKey):\(secret ?? s.moto.secretKey)",
                    "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD", "-w", "\n%{http_code}",
                ] + args,
                environment: ["NO_PROXY": "*"])
        }
        let base = "\(s.moto.endpoint)/\(s.bucket)/m.bin"
        let wrong = try await curl(["-X", "POST", base + "?uploads="], secret: "wrong")
        #expect(wrong.stdout.hasSuffix("\n403") && wrong.stdout.contains("SignatureDoesNotMatch"), "\(wrong)")
        let created = try await curl(["-X", "POST", base + "?uploads="])
        #expect(created.stdout.hasSuffix("\n200"), "\(created)")
        let uploadId = try #require(created.stdout.firstMatch(of: /<UploadId>([^<]+)<\/UploadId>/)?.1).description
        #expect(try await s.moto.uploads(s.bucket).map(\.uploadId) == [uploadId])
        try makeRandomFile(path: s.w.path("www/p1"), size: 5 * Self.MiB, seed: 1)
        let put = try await curl(["-X", "PUT", "-T", s.w.path("www/p1"), base + "?partNumber=1&uploadId=" + uploadId])
        #expect(put.stdout.hasSuffix("\n200"), "\(put)")
        let md5 = try partMD5s(file: s.w.path("www/p1"), partSize: 5 * Self.MiB)[0]
        #expect(try await s.moto.parts(s.bucket, "m.bin", uploadId: uploadId).map(\.etag) == ["\"\(md5)\""])
        let other = try await s.moto.uploadPart(s.bucket, "m.bin", uploadId: uploadId, number: 1, size: 5 * Self.MiB)
        #expect(other != "\"\(md5)\"")
        #expect(try await s.moto.parts(s.bucket, "m.bin", uploadId: uploadId).map(\.etag) == [other])
        try await s.moto.abort(s.bucket, "m.bin", uploadId: uploadId)
        #expect(try await s.moto.uploads(s.bucket).isEmpty)
        #expect(try await s.moto.toolError("parts", [s.bucket, "m.bin", uploadId]) == "NoSuchUpload")
        #expect(try await s.moto.toolError("sha256", [s.bucket, "m.bin"]) == "NoSuchKey")
        let digest = try await s.moto.putRandom(s.bucket, "r.bin", size: 1000)
        #expect(try await s.moto.sha256(s.bucket, "r.bin") == digest)
        let get = try await curl([
            "-o", s.w.path("out/r.bin"), "-H", "Range: bytes=0-", "\(s.moto.endpoint)/\(s.bucket)/r.bin",
        ])
        #expect(get.stdout.hasSuffix("206"), "\(get)")
        #expect(try sha256(file: s.w.path("out/r.bin")) == digest)
    }

    @Test func wholeUploadIsMultipartAndPrintsTheURL() async throws {
        let s = try await S3Scene()
        let size = 20 * Self.MiB + 12_345
        let digest = try makeRandomFile(path: s.w.path("www/src.bin"), size: size, seed: 11)
        let r = try await s.run([
            "upload", s.w.path("www/src.bin"), s.url("dir/big.bin"), "--endpoint-url", s.moto.endpoint,
        ])
        #expect(r.status == 0, "\(r)")
        #expect(r.stdout == s.url("dir/big.bin") + "\n", "\(r)")
        #expect(try await s.moto.sha256(s.bucket, "dir/big.bin") == digest)
        // 8 MiB parts by default: three parts, and the object's ETag is S3's multipart ETag of exactly those.
        let head = try await s.moto.head(s.bucket, "dir/big.bin")
        #expect(head.size == size)
        #expect(head.etag == (try multipartETag(file: s.w.path("www/src.bin"), partSize: 8 * Self.MiB)), "\(head)")
        #expect(try await s.moto.uploads(s.bucket).isEmpty)
        #expect(try s.w.tokens().isEmpty)
    }

    @Test(
        "--s3-checksum md5, crc32 and none: each multipart upload is accepted with signatures checked, bytes equal",
        arguments: ["md5", "crc32", "none"])
    func everyChecksumChoiceUploads(choice: String) async throws {
        let s = try await S3Scene()
        let digest = try makeRandomFile(path: s.w.path("www/src.bin"), size: 12 * Self.MiB + 7, seed: 14)
        let r = try await s.run([
            "upload", s.w.path("www/src.bin"), s.url("c.bin"), "--endpoint-url", s.moto.endpoint,
            "--part-size", "5M", "--s3-checksum", choice,
        ])
        #expect(r.status == 0, "\(r)")
        #expect(try await s.moto.sha256(s.bucket, "c.bin") == digest)
        #expect(
            try await s.moto.head(s.bucket, "c.bin").etag
                == (try multipartETag(file: s.w.path("www/src.bin"), partSize: 5 * Self.MiB)))
        let bad = try await s.run([
            "upload", s.w.path("www/src.bin"), s.url("d.bin"), "--endpoint-url", s.moto.endpoint, "--s3-checksum",
            "sha1",
        ])
        #expect(bad.status == 64, "\(bad)")
    }

    @Test func smallFileGoesAsOneSignedPut() async throws {
        let s = try await S3Scene()
        let digest = try makeRandomFile(path: s.w.path("www/small.bin"), size: 1_000_000, seed: 12)
        let r = try await s.run([
            "upload", s.w.path("www/small.bin"), s.url("small.bin"), "--endpoint-url", s.moto.endpoint, "--json",
        ])
        #expect(r.status == 0, "\(r)")
        #expect(try await s.moto.sha256(s.bucket, "small.bin") == digest)
        // A plain PUT's ETag is the body's MD5, without the multipart "-N".
        let md5 = lowercaseHex(
            Insecure.MD5.hash(data: try Data(contentsOf: URL(fileURLWithPath: s.w.path("www/small.bin")))))
        #expect(try await s.moto.head(s.bucket, "small.bin").etag == "\"\(md5)\"")
        #expect(events(r.stdout).first("completed") != nil, "\(r.stdout)")
    }

    @Test func partSizeAndParallelAreHonoured() async throws {
        let s = try await S3Scene()
        let size = 12 * Self.MiB + 1
        let digest = try makeRandomFile(path: s.w.path("www/src.bin"), size: size, seed: 13)
        let r = try await s.run([
            "upload", s.w.path("www/src.bin"), s.url("p.bin"), "--endpoint-url", s.moto.endpoint,
            "--part-size", "5M", "--parallel", "2", "-q",
        ])
        #expect(r.status == 0, "\(r)")
        #expect(try await s.moto.sha256(s.bucket, "p.bin") == digest)
        let etag = try await s.moto.head(s.bucket, "p.bin").etag
        #expect(etag.hasSuffix("-3\""), "\(etag)")
        #expect(etag == (try multipartETag(file: s.w.path("www/src.bin"), partSize: 5 * Self.MiB)))
    }

    @Test func partSizeBelowS3sMinimumIsAUsageError() async throws {
        let s = try await S3Scene()
        try makeRandomFile(path: s.w.path("www/src.bin"), size: 6 * Self.MiB, seed: 14)
        let r = try await s.run([
            "upload", s.w.path("www/src.bin"), s.url("p.bin"), "--endpoint-url", s.moto.endpoint, "--part-size", "1M",
        ])
        #expect(r.status == 64, "\(r)")
        #expect(try await s.moto.keys(s.bucket).isEmpty)
    }

    @Test func credentialsAndEndpointFromTheAWSFiles() async throws {
        let s = try await S3Scene()
        let digest = try makeRandomFile(path: s.w.path("www/src.bin"), size: 6 * Self.MiB, seed: 15)
        try s.writeAWSFile(
            "credentials",
            """
            [default]
            aws_access_key_id = AKIANOTTHEONEWEWANT0
            aws_secret_access_key = not-this-one
            [other]
            aws_access_key_id = \(s.moto.accessKey)
            aws_secret_access_key = \(s.moto.secretKey)
            """)
        try s.writeAWSFile(
            "config",
            """
            [profile other]
            region = us-east-1
            """)
        var env = s.moto.environment(home: s.home, credentials: false)
        env["AWS_ENDPOINT_URL_S3"] = s.moto.endpoint
        env["AWS_REGION"] = nil
        let r = try await s.run(
            ["upload", s.w.path("www/src.bin"), s.url("prof.bin"), "--profile", "other", "--part-size", "5M"], env: env)
        #expect(r.status == 0, "\(r)")
        #expect(try await s.moto.sha256(s.bucket, "prof.bin") == digest)
        // AWS_PROFILE picks it too, and AWS_ENDPOINT_URL serves when no S3-specific endpoint is set.
        env["AWS_PROFILE"] = "other"
        env["AWS_ENDPOINT_URL_S3"] = nil
        env["AWS_ENDPOINT_URL"] = s.moto.endpoint
        let d = try await s.run(["download", s.url("prof.bin"), "-o", s.w.path("out/prof.bin")], env: env)
        #expect(d.status == 0, "\(d)")
        #expect(try sha256(file: s.w.path("out/prof.bin")) == digest)
    }

    @Test func uploadCutSeveralTimesCompletes() async throws {
        let s = try await S3Scene()
        let size = 24 * Self.MiB
        let digest = try makeRandomFile(path: s.w.path("www/src.bin"), size: size, seed: 16)
        let plan = Fault.randomCuts(seed: 5, count: 5, direction: .upstream, bytes: 1_000_000...4_500_000)
            .map { $0.throttled(bytesPerSecond: 20_000_000) }
        let proxy = try FaultProxy(upstreamPort: s.moto.port, plan: plan)
        let r = try await s.run([
            "upload", s.w.path("www/src.bin"), s.url("cut.bin"), "--endpoint-url", proxy.baseURL,
            "--part-size", "5M", "--parallel", "2", "--retries", "20", "--retry-delay", "0.05", "--json",
        ])
        #expect(r.status == 0, "\(r)")
        #expect(try await s.moto.sha256(s.bucket, "cut.bin") == digest)
        let cuts = proxy.connections.filter(\.triggered).count
        #expect(cuts >= 3, "\(proxy.connections)")
        #expect(names(events(r.stdout)).contains("retry"))
        // A cut costs at most the part that was in flight on that connection.
        #expect(proxy.bytesUpstream <= size + cuts * 5 * Self.MiB + 256 * 1024, "\(proxy.bytesUpstream)")
        #expect(try await s.moto.uploads(s.bucket).isEmpty)
        #expect(try s.w.tokens().isEmpty)
    }

    @Test func downloadCutThenResumedFromTheToken() async throws {
        let s = try await S3Scene()
        let size = 20 * Self.MiB
        let digest = try await s.moto.putRandom(s.bucket, "obj.bin", size: size)
        let proxy = try FaultProxy(
            upstreamPort: s.moto.port, plan: Array(repeating: .cutAfterDownstream(bytes: 7_000_000), count: 4))
        let out = s.w.path("out/obj.bin")
        let cut = try await s.run([
            "download", s.url("obj.bin"), "-o", out, "--endpoint-url", proxy.baseURL, "--retries", "0",
        ])
        #expect(cut.status == 75, "\(cut)")
        let id = try #require(try s.w.tokens().first)
        let token = try s.w.token(id)
        let s3 = try #require(token["s3"] as? [String: Any], "\(token)")
        #expect(s3["bucket"] as? String == s.bucket)
        #expect(s3["key"] as? String == "obj.bin")
        #expect(s3["endpoint"] as? String == proxy.baseURL, "\(s3)")
        #expect(s3["region"] as? String == "us-east-1")
        try s.expectNoCredentials(inTokenFile: id)
        proxy.setPlan([])
        let before = proxy.bytesDownstream
        let r = try await s.run(["resume", id, "--json"])
        #expect(r.status == 0, "\(r)")
        #expect(try sha256(file: out) == digest)
        #expect(!s.w.exists(out + ".part"))
        #expect(try s.w.tokens().isEmpty)
        let started = try #require(events(r.stdout).first("started"))
        #expect((started["offset"] as? Int ?? 0) > 5_000_000, "\(started)")
        // Only the rest (plus the overlap and headers) crossed again.
        #expect(proxy.bytesDownstream - before < size - 5_000_000, "\(proxy.bytesDownstream - before)")
    }

    @Test func downloadCutSeveralTimesInOneRun() async throws {
        let s = try await S3Scene()
        let size = 16 * Self.MiB
        let digest = try await s.moto.putRandom(s.bucket, "a/b/c.bin", size: size)
        let proxy = try FaultProxy(
            upstreamPort: s.moto.port,
            plan: Fault.randomCuts(seed: 9, count: 3, direction: .downstream, bytes: 1_000_000...5_000_000))
        let out = s.w.path("out/c.bin")
        let r = try await s.run([
            "download", s.url("a/b/c.bin"), "-o", out, "--endpoint-url", proxy.baseURL,
            "--retry-delay", "0.05", "--json",
        ])
        #expect(r.status == 0, "\(r)")
        #expect(try sha256(file: out) == digest)
        let cuts = proxy.connections.filter(\.triggered).count
        #expect(cuts == 3, "\(proxy.connections)")
        #expect(names(events(r.stdout)).filter { $0 == "retry" }.count == cuts)
        #expect(proxy.bytesDownstream < size + cuts * 128 * 1024 + 64 * 1024, "\(proxy.bytesDownstream)")
    }

    @Test func downloadOverFourConnections() async throws {
        let s = try await S3Scene()
        let size = 24 * Self.MiB + 7
        let digest = try await s.moto.putRandom(s.bucket, "seg.bin", size: size)
        let proxy = try FaultProxy(upstreamPort: s.moto.port)
        let out = s.w.path("out/seg.bin")
        let r = try await s.run([
            "download", s.url("seg.bin"), "-o", out, "--endpoint-url", proxy.baseURL, "--connections", "4",
        ])
        #expect(r.status == 0, "\(r)")
        #expect(r.stdout == out + "\n", "\(r)")
        #expect(try sha256(file: out) == digest)
        #expect(proxy.connectionCount >= 4, "\(proxy.connections)")
        #expect(proxy.bytesDownstream < size + 256 * 1024)
    }

    @Test func changedObjectIsFetchedAnew() async throws {
        let s = try await S3Scene()
        let size = 12 * Self.MiB
        _ = try await s.moto.putRandom(s.bucket, "chg.bin", size: size)
        let proxy = try FaultProxy(upstreamPort: s.moto.port, plan: [.cutAfterDownstream(bytes: 5_000_000)])
        let out = s.w.path("out/chg.bin")
        let cut = try await s.run([
            "download", s.url("chg.bin"), "-o", out, "--endpoint-url", proxy.baseURL, "--retries", "0",
        ])
        #expect(cut.status == 75, "\(cut)")
        let id = try #require(try s.w.tokens().first)
        // Same size, other bytes: moto ignores If-Range, so the client's ETag check and overlap must catch it.
        let digest = try await s.moto.putRandom(s.bucket, "chg.bin", size: size)
        let r = try await s.run(["resume", id, "--json"])
        #expect(r.status == 0, "\(r)")
        #expect(try sha256(file: out) == digest)
        #expect(events(r.stdout).first("restarted") != nil, "\(r.stdout)")
    }

    @Test func prefixOfFiftyObjectsLandsUnderTheFolder() async throws {
        let s = try await S3Scene()
        let objects = try await s.moto.putMany(s.bucket, prefix: "pre/", count: 50, size: 20_000)
        // Near the prefix but not under it: never fetched.
        try await s.moto.putRandom(s.bucket, "prex.bin", size: 100)
        try await s.moto.putRandom(s.bucket, "other/pre/x.bin", size: 100)
        let dir = try s.w.dir.subdirectory("dl")
        let r = try await s.run([
            "download", s.url("pre/"), "-o", dir, "--parallel", "8", "--endpoint-url", s.moto.endpoint,
        ])
        #expect(r.status == 0, "\(r)")
        #expect(r.stdoutLines.count == 50, "\(r)")
        // Keys become paths relative to the prefix (as `aws s3 cp --recursive s3://B/pre/ DIR` lays them out).
        let want = Dictionary(uniqueKeysWithValues: objects.map { (String($0.key.dropFirst(4)), $0.value) })
        #expect(try filesBelow(dir) == Set(want.keys))
        for (rel, digest) in want {
            #expect(try sha256(file: dir + "/" + rel) == digest, "\(rel)")
        }
        #expect(
            Set(try FileManager.default.contentsOfDirectory(atPath: s.w.dir.path)) == [
                "state", "out", "www", "home", "dl",
            ])
        #expect(try s.w.tokens().isEmpty)
        // The prefix is a batch like a folder: again with --skip-existing, every object is there with its
        // listed size and time (set from LastModified), and none is fetched.
        let again = try await s.run([
            "download", s.url("pre/"), "-o", dir, "--skip-existing", "--json", "--endpoint-url", s.moto.endpoint,
        ])
        #expect(again.status == 0, "\(again)")
        let skipped = events(again.stdout).filter { $0["event"] as? String == "skipped" && $0["path"] != nil }
        #expect(skipped.count == 50 && events(again.stdout).first("completed") == nil, "\(again.stdout)")
    }

    @Test func aPrefixMakesItsFolderWhenMissing() async throws {
        let s = try await S3Scene()
        let objects = try await s.moto.putMany(s.bucket, prefix: "mk/", count: 3, size: 1000)
        let dir = s.w.path("new/nested")
        let r = try await s.run(["download", s.url("mk/"), "-o", dir, "--endpoint-url", s.moto.endpoint])
        #expect(r.status == 0, "\(r)")
        #expect(try filesBelow(dir) == Set(objects.keys.map { String($0.dropFirst(3)) }))
    }

    @Test func anEndpointThatDoesNotResolveFailsAtOnceOrIsWaitedFor() async throws {
        let s = try await S3Scene()
        _ = try makeRandomFile(path: s.w.path("www/src.bin"), size: 6_000_000, seed: 77)
        // A typo'd endpoint on a fresh upload: one line naming the host, exit 1, no retries.
        let r = try await s.run([
            "upload", s.w.path("www/src.bin"), s.url("x.bin"), "--endpoint-url", "http://nowhere.invalid:9000",
        ])
        #expect(r.status == 1, "\(r)")
        #expect(r.stderr.contains("Could not resolve host: nowhere.invalid") && !r.stderr.contains("retry"), "\(r)")
        // With --wait-network it is waited for, try after try (each on a fresh handle: no libcurl "bad argument"),
        // until a pause stops it with the token kept.
        let p = try s.start([
            "upload", s.w.path("www/src.bin"), s.url("y.bin"), "--endpoint-url", "http://nowhere.invalid:9000",
            "--wait-network", "--retry-delay", "0.1",
        ])
        try await eventually(timeout: .seconds(30)) {
            p.stderrSoFar.components(separatedBy: "waiting for the network").count > 3
        }
        p.send(signal: SIGTERM)
        let stopped = try await p.wait()
        #expect(stopped.status == 75, "\(stopped)")
        #expect(!stopped.stderr.contains("bad argument"), "\(stopped)")
    }

    @Test func prefixKeysThatLeaveTheFolderAreRefused() async throws {
        let s = try await S3Scene()
        let objects = try await s.moto.putMany(s.bucket, prefix: "pre/", count: 5, size: 10_000)
        try await s.moto.putRandom(s.bucket, "pre/../evil.bin", size: 100)
        try await s.moto.putRandom(s.bucket, "pre/a/../../evil2.bin", size: 100)
        #expect(try await s.moto.keys(s.bucket).contains("pre/../evil.bin"), "moto keeps such keys")
        let dir = try s.w.dir.subdirectory("sub/dl")
        let r = try await s.run(["download", s.url("pre/"), "-o", dir, "--endpoint-url", s.moto.endpoint])
        // Left out with a line each, as a folder download's unsafe links are: the batch itself succeeds.
        #expect(r.status == 0, "\(r)")
        let lines = splitLines(r.stderr)
        #expect(lines.filter { $0.contains("evil.bin") }.count == 1, "\(r)")
        #expect(lines.filter { $0.contains("evil2.bin") }.count == 1, "\(r)")
        #expect(try filesBelow(dir) == Set(objects.keys.map { String($0.dropFirst(4)) }))
        for (key, digest) in objects {
            #expect(try sha256(file: dir + "/" + key.dropFirst(4)) == digest)
        }
        // Nothing anywhere in the workspace but the five files (and nothing next to it).
        let everything = try filesBelow(s.w.dir.path).filter { !$0.hasPrefix("state/") }
        #expect(everything == Set(objects.keys.map { "sub/dl/" + $0.dropFirst(4) }), "\(everything)")
        #expect(!s.w.exists(URL(fileURLWithPath: s.w.dir.path).deletingLastPathComponent().path + "/evil.bin"))
    }

    @Test func wrongSecretFailsNamingS3sCodeWithoutTheSecret() async throws {
        let s = try await S3Scene()
        try makeRandomFile(path: s.w.path("www/src.bin"), size: 100_000, seed: 17)
        try await s.moto.putRandom(s.bucket, "there.bin", size: 1000)
        let wrong = "Wr0ngSecretWr0ngSecretWr0ngSecret+/xyz"
        let env = s.moto.environment(home: s.home, secret: wrong)
        for args in [
            ["upload", s.w.path("www/src.bin"), s.url("w.bin")],
            ["download", s.url("there.bin"), "-o", s.w.path("out/there.bin")],
        ] {
            let r = try await s.run(args + ["--endpoint-url", s.moto.endpoint], env: env)
            #expect(r.status == 1, "\(r)")
            #expect(splitLines(r.stderr).count == 1, "\(r)")
            #expect(r.stderr.contains("SignatureDoesNotMatch"), "\(r)")
            #expect(!r.stderr.contains(wrong) && !r.stdout.contains(wrong))
            #expect(!r.stderr.contains(s.moto.secretKey))
            #expect(r.stdout.isEmpty)
        }
        #expect(try await s.moto.keys(s.bucket) == ["there.bin"])
        #expect(!s.w.exists(s.w.path("out/there.bin")))
    }

    @Test func unknownAccessKeyIsNamed() async throws {
        let s = try await S3Scene()
        try await s.moto.putRandom(s.bucket, "there.bin", size: 1000)
        var env = s.moto.environment(home: s.home)
        env["AWS_ACCESS_KEY_ID"] = "AKIAUNKNOWNUNKNOWN00"
        let r = try await s.run(
            ["download", s.url("there.bin"), "-o", s.w.path("out/t.bin"), "--endpoint-url", s.moto.endpoint], env: env)
        #expect(r.status == 1, "\(r)")
        #expect(r.stderr.contains("InvalidAccessKeyId"), "\(r)")
        #expect(!r.stderr.contains(s.moto.secretKey))
    }

    @Test func noCredentialsIsOneLine() async throws {
        let s = try await S3Scene()
        try makeRandomFile(path: s.w.path("www/src.bin"), size: 100_000, seed: 18)
        let env = s.moto.environment(home: s.home, credentials: false)
        for args in [
            ["upload", s.w.path("www/src.bin"), s.url("n.bin")],
            ["download", s.url("n.bin"), "-o", s.w.path("out/n.bin")],
        ] {
            let r = try await s.run(args + ["--endpoint-url", s.moto.endpoint], env: env)
            #expect(r.status == 1, "\(r)")
            #expect(splitLines(r.stderr).count == 1, "\(r)")
            #expect(r.stderr.lowercased().contains("credentials"), "\(r)")
            #expect(try s.w.tokens().isEmpty)
        }
        #expect(try await s.moto.keys(s.bucket).isEmpty)
    }

    @Test(arguments: ["s3://x/k", "s3:///k", "s3://-bad-/k", "s3://bucket..name/k"])
    func badS3URLIsAUsageError(url: String) async throws {
        let s = try await S3Scene()
        try makeRandomFile(path: s.w.path("www/src.bin"), size: 1000, seed: 19)
        let up = try await s.run(["upload", s.w.path("www/src.bin"), url, "--endpoint-url", s.moto.endpoint])
        #expect(up.status == 64, "\(up)")
        let down = try await s.run(["download", url, "-o", s.w.path("out/k"), "--endpoint-url", s.moto.endpoint])
        #expect(down.status == 64, "\(down)")
        #expect(try s.w.tokens().isEmpty)
    }

    @Test func missingKeyAndBucketAreNamed() async throws {
        let s = try await S3Scene()
        let r = try await s.run([
            "download", s.url("nope.bin"), "-o", s.w.path("out/nope.bin"), "--endpoint-url", s.moto.endpoint,
        ])
        #expect(r.status == 1, "\(r)")
        #expect(r.stderr.contains("NoSuchKey"), "\(r)")
        #expect(splitLines(r.stderr).count == 1, "\(r)")
        #expect(!s.w.exists(s.w.path("out/nope.bin")) && !s.w.exists(s.w.path("out/nope.bin.part")))
        try makeRandomFile(path: s.w.path("www/src.bin"), size: 1000, seed: 20)
        let u = try await s.run([
            "upload", s.w.path("www/src.bin"), "s3://\(s.bucket)-missing/k.bin", "--endpoint-url", s.moto.endpoint,
        ])
        #expect(u.status == 1, "\(u)")
        #expect(u.stderr.contains("NoSuchBucket"), "\(u)")
    }
}

/// The kill -9 scenarios: an upload slowed by `--limit-rate` is killed once its token holds two parts,
/// then resumed, cancelled, or met with a server that changed under it. Timed (a kill must land
/// mid-upload), so serialized and listed in the Makefile's TIMED_SUITES.
@Suite(.serialized) struct S3CrashTests {
    static let MiB = 1 << 20
    static let partSize = 5 * MiB
    static let size = 30 * MiB + 1234  // six full parts and a short seventh

    struct Killed {
        let id: String
        let uploadId: String
        let parts: [[String: Any]]
        let proxy: FaultProxy
    }

    /// Uploads `www/src.bin` through a pass-through proxy (it counts the bytes) with one part at a time,
    /// slowly, and kills it with SIGKILL once the token holds at least two finished parts.
    func killedUpload(_ s: S3Scene, key: String) async throws -> Killed {
        let proxy = try FaultProxy(upstreamPort: s.moto.port)
        let p = try s.start([
            "upload", s.w.path("www/src.bin"), s.url(key), "--endpoint-url", proxy.baseURL,
            "--part-size", "5M", "--parallel", "1", "--limit-rate", "4M", "--json",
        ])
        var tokenS3: [String: Any] = [:]
        try await eventually(timeout: .seconds(60)) {
            guard p.isRunning else {
                throw SupportError("the upload ended before the kill: \(p.stdoutSoFar) \(p.stderrSoFar)")
            }
            guard let id = try s.w.tokens().first,
                let upload = try? s.w.token(id)["upload"] as? [String: Any],
                let s3 = upload["s3"] as? [String: Any], let parts = s3["parts"] as? [Any]
            else { return false }
            tokenS3 = s3
            return parts.count >= 2
        }
        p.send(signal: SIGKILL)
        let ended = try await p.wait()
        #expect(ended.signaled && ended.status == SIGKILL, "\(ended)")
        let id = try #require(try s.w.tokens().first)
        let uploadId = try #require(tokenS3["uploadId"] as? String, "\(tokenS3)")
        return Killed(id: id, uploadId: uploadId, parts: tokenS3["parts"] as? [[String: Any]] ?? [], proxy: proxy)
    }

    func source(_ s: S3Scene, seed: UInt64 = 21) throws -> String {
        try makeRandomFile(path: s.w.path("www/src.bin"), size: Self.size, seed: seed)
    }

    @Test func killedMidUploadThenResumed() async throws {
        let s = try await S3Scene()
        let digest = try source(s)
        let k = try await killedUpload(s, key: "k/obj.bin")
        let upload = try #require(try s.w.token(k.id)["upload"] as? [String: Any])
        #expect(upload["protocol"] as? String == "s3")
        let s3 = try #require(upload["s3"] as? [String: Any])
        #expect(s3["bucket"] as? String == s.bucket && s3["key"] as? String == "k/obj.bin", "\(s3)")
        #expect(s3["endpoint"] as? String == k.proxy.baseURL && s3["region"] as? String == "us-east-1", "\(s3)")
        #expect(s3["partSize"] as? Int == Self.partSize, "\(s3)")
        // Each recorded part is the source's: the CRC32C it went with (the default --s3-checksum), and the
        // server's ETag of it (moto's is the part's MD5).
        #expect(s3["checksum"] as? String == "crc32c", "\(s3)")
        let md5s = try partMD5s(file: s.w.path("www/src.bin"), partSize: Self.partSize)
        let crcs = try partCRC32Cs(file: s.w.path("www/src.bin"), partSize: Self.partSize)
        for part in k.parts {
            let n = try #require(part["number"] as? Int)
            #expect(part["size"] as? Int == Self.partSize)
            #expect(part["checksum"] as? String == crcs[n - 1], "\(part)")
            #expect(part["md5"] == nil, "\(part)")
            #expect(part["etag"] as? String == "\"\(md5s[n - 1])\"", "\(part)")
        }
        try s.expectNoCredentials(inTokenFile: k.id)
        let listed = try await s.moto.parts(s.bucket, "k/obj.bin", uploadId: k.uploadId)
        #expect(listed.count >= k.parts.count)
        let show = try await s.run(["show", k.id])
        #expect(show.status == 0, "\(show)")
        #expect(!show.stdout.contains(s.moto.secretKey) && !show.stdout.contains(s.moto.accessKey))

        let before = k.proxy.bytesUpstream
        let r = try await s.run(["resume", k.id, "--json"])
        #expect(r.status == 0, "\(r)")
        #expect(try await s.moto.sha256(s.bucket, "k/obj.bin") == digest)
        #expect(
            try await s.moto.head(s.bucket, "k/obj.bin").etag
                == (try multipartETag(file: s.w.path("www/src.bin"), partSize: Self.partSize)))
        #expect(try await s.moto.uploads(s.bucket).isEmpty)
        #expect(try s.w.tokens().isEmpty)
        let started = try #require(events(r.stdout).first("started"))
        #expect((started["offset"] as? Int ?? 0) >= k.parts.count * Self.partSize, "\(started)")
        // Sent twice: at most the one part that was in flight (one connection).
        let total = k.proxy.bytesUpstream
        #expect(total <= Self.size + Self.partSize + 256 * 1024, "upstream \(total) for \(Self.size)")
        // The resume sent only what the token did not hold.
        #expect(total - before <= Self.size - k.parts.count * Self.partSize + 256 * 1024, "\(total - before)")
    }

    @Test func partWhoseETagNoLongerMatchesIsSentAgain() async throws {
        let s = try await S3Scene()
        let digest = try source(s)
        let k = try await killedUpload(s, key: "e.bin")
        // Part 1 on the server now holds other bytes of the same size: its ETag differs from the token's.
        let other = try await s.moto.uploadPart(
            s.bucket, "e.bin", uploadId: k.uploadId, number: 1, size: Self.partSize, seed: 99)
        #expect(other != k.parts.first { $0["number"] as? Int == 1 }?["etag"] as? String)
        let r = try await s.run(["resume", k.id])
        #expect(r.status == 0, "\(r)")
        #expect(try await s.moto.sha256(s.bucket, "e.bin") == digest)
        #expect(
            try await s.moto.head(s.bucket, "e.bin").etag
                == (try multipartETag(file: s.w.path("www/src.bin"), partSize: Self.partSize)))
    }

    @Test func changedSourceFailsTheResumeAndSendsNothing() async throws {
        let s = try await S3Scene()
        _ = try source(s)
        let k = try await killedUpload(s, key: "c.bin")
        let partsBefore = try await s.moto.parts(s.bucket, "c.bin", uploadId: k.uploadId)
        _ = try source(s, seed: 77)  // same size, other bytes
        let before = (k.proxy.connectionCount, k.proxy.bytesUpstream)
        let r = try await s.run(["resume", k.id])
        #expect(r.status == 65, "\(r)")
        #expect(splitLines(r.stderr).count == 1, "\(r)")
        #expect(k.proxy.connectionCount == before.0 && k.proxy.bytesUpstream == before.1, "nothing may be sent")
        #expect(try s.w.tokens() == [k.id])
        let partsAfter = try await s.moto.parts(s.bucket, "c.bin", uploadId: k.uploadId)
        #expect(partsAfter.map(\.etag) == partsBefore.map(\.etag))
    }

    @Test func cancelAbortsTheMultipartUpload() async throws {
        let s = try await S3Scene()
        _ = try source(s)
        let k = try await killedUpload(s, key: "x.bin")
        #expect(try await s.moto.uploads(s.bucket).map(\.uploadId) == [k.uploadId])
        let r = try await s.run(["cancel", k.id])
        #expect(r.status == 0, "\(r)")
        #expect(try await s.moto.uploads(s.bucket).isEmpty)
        #expect(try await s.moto.toolError("parts", [s.bucket, "x.bin", k.uploadId]) == "NoSuchUpload")
        #expect(try s.w.tokens().isEmpty)
        #expect(try await s.moto.keys(s.bucket).isEmpty)
    }

    @Test func cancelKeepPartsLeavesTheUploadOnTheServer() async throws {
        let s = try await S3Scene()
        _ = try source(s)
        let k = try await killedUpload(s, key: "kp.bin")
        let r = try await s.run(["cancel", k.id, "--keep-parts"])
        #expect(r.status == 0, "\(r)")
        #expect(try await s.moto.uploads(s.bucket).map(\.uploadId) == [k.uploadId])
        #expect(try await s.moto.parts(s.bucket, "kp.bin", uploadId: k.uploadId).count >= k.parts.count)
        #expect(try s.w.tokens().isEmpty)
        // The user can still abort it, with its id (a kept upload is the user's to clean up).
        try await s.moto.abort(s.bucket, "kp.bin", uploadId: k.uploadId)
    }

    @Test func noSuchUploadOnResumeStartsANewUpload() async throws {
        let s = try await S3Scene()
        let digest = try source(s)
        let k = try await killedUpload(s, key: "n.bin")
        try await s.moto.abort(s.bucket, "n.bin", uploadId: k.uploadId)
        let r = try await s.run(["resume", k.id, "--json"])
        #expect(r.status == 0, "\(r)")
        let restarted = try #require(events(r.stdout).first("restarted"), "\(r.stdout)")
        #expect((restarted["reason"] as? String)?.contains("NoSuchUpload") == true, "\(restarted)")
        #expect(try await s.moto.sha256(s.bucket, "n.bin") == digest)
        #expect(try await s.moto.uploads(s.bucket).isEmpty)
        #expect(try s.w.tokens().isEmpty)
    }
}

// MARK: - Support

/// One moto for the whole test process (tests use buckets of their own); started on first use.
enum SharedMoto {
    static let verifying = Task { try await MotoServer() }
}

/// One test's S3 world: a workspace, a HOME inside it (no ~/.aws of the machine), a fresh bucket on a
/// shared moto, and `resumectl` run with only the environment `MotoServer.environment` gives.
struct S3Scene {
    let w: Workspace
    let moto: MotoServer
    let bucket: String
    var home: String { w.path("home") }

    init() async throws {
        w = try Workspace()
        try w.dir.subdirectory("home")
        moto = try await SharedMoto.verifying.value
        var rng = SystemRandomNumberGenerator()
        bucket =
            "rt-" + String((0..<12).map { _ in "0123456789abcdefghijklmnopqrstuvwxyz".randomElement(using: &rng)! })
        try await moto.createBucket(bucket)
    }

    func url(_ key: String) -> String { "s3://\(bucket)/\(key)" }

    /// Runs `resumectl ARGS --state-dir STATE` to its end with `env` (default: the server's credentials) and nothing
    /// else.
    func run(_ args: [String], env: [String: String]? = nil, timeout: Duration = .seconds(180)) async throws
        -> ProcessResult
    {
        try await runProcess(
            resumectlBinary, args + ["--state-dir", w.state], environment: env ?? moto.environment(home: home),
            inheritEnvironment: false, currentDirectory: w.out, timeout: timeout)
    }

    func start(_ args: [String], env: [String: String]? = nil) throws -> RunningProcess {
        try RunningProcess(
            resumectlBinary, args + ["--state-dir", w.state], environment: env ?? moto.environment(home: home),
            inheritEnvironment: false, currentDirectory: w.out)
    }

    /// Writes `home/.aws/NAME`.
    func writeAWSFile(_ name: String, _ text: String) throws {
        try w.dir.subdirectory("home/.aws")
        try (text + "\n").write(toFile: home + "/.aws/" + name, atomically: true, encoding: .utf8)
    }

    func expectNoCredentials(inTokenFile id: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let text = try String(contentsOfFile: w.state + "/tokens/\(id).json", encoding: .utf8)
        #expect(!text.contains(moto.secretKey), "the token holds the secret", sourceLocation: sourceLocation)
        #expect(!text.contains(moto.accessKey), "the token holds the access key", sourceLocation: sourceLocation)
    }
}

/// Regular files below `dir`, as paths relative to it.
func filesBelow(_ dir: String) throws -> Set<String> {
    var out = Set<String>()
    guard let e = FileManager.default.enumerator(atPath: dir) else { throw SupportError("cannot list \(dir)") }
    while let rel = e.nextObject() as? String {
        var isDir: ObjCBool = false
        if FileManager.default.fileExists(atPath: dir + "/" + rel, isDirectory: &isDir), !isDir.boolValue {
            out.insert(rel)
        }
    }
    return out
}

/// Lowercase hex MD5 of each `partSize` piece of a file.
func partMD5s(file: String, partSize: Int) throws -> [String] {
    let handle = try FileHandle(forReadingAtPath: file).orThrow("cannot open \(file)")
    defer { try? handle.close() }
    var out: [String] = []
    while let data = try handle.read(upToCount: partSize), !data.isEmpty {
        out.append(lowercaseHex(Insecure.MD5.hash(data: data)))
    }
    return out
}

/// The base64 of each part's CRC32C, big-endian, as `x-amz-checksum-crc32c` carries it. Computed bit by bit
/// here (reflected polynomial 0x82F63B78): an oracle independent of the ISA-L code under test.
func partCRC32Cs(file: String, partSize: Int) throws -> [String] {
    let handle = try FileHandle(forReadingAtPath: file).orThrow("cannot open \(file)")
    defer { try? handle.close() }
    var table = [UInt32](repeating: 0, count: 256)
    for i in 0..<256 {
        var c = UInt32(i)
        for _ in 0..<8 { c = c & 1 == 1 ? (c >> 1) ^ 0x82F6_3B78 : c >> 1 }
        table[i] = c
    }
    var out: [String] = []
    while let data = try handle.read(upToCount: partSize), !data.isEmpty {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in data { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        crc = ~crc
        out.append(
            Data([UInt8(crc >> 24), UInt8(crc >> 16 & 0xFF), UInt8(crc >> 8 & 0xFF), UInt8(crc & 0xFF)])
                .base64EncodedString())
    }
    return out
}

/// S3's ETag of a multipart upload of `file` in `partSize` parts: `"<md5 of the parts' binary MD5s>-N"`.
func multipartETag(file: String, partSize: Int) throws -> String {
    let md5s = try partMD5s(file: file, partSize: partSize)
    var joined = Data()
    for hex in md5s {
        var i = hex.startIndex
        while i < hex.endIndex {
            let j = hex.index(i, offsetBy: 2)
            joined.append(UInt8(hex[i..<j], radix: 16)!)
            i = j
        }
    }
    return "\"\(lowercaseHex(Insecure.MD5.hash(data: joined)))-\(md5s.count)\""
}
