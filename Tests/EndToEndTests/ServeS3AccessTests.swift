import Foundation
import Testing

/// `serve --store s3://` with `--htpasswd` and the limit flags (README's serve section), against moto
/// with signatures checked: what holds on a folder (ServeLoginTests, ServeLimitsTests) holds on the
/// prefix, and a refused request leaves nothing on S3 (no object, no record or tail, no multipart upload).
@Suite("serve S3 store: logins and limits")
struct ServeS3AccessTests {
    static let MiB = 1 << 20
    static let draft = ["-H", "Expect:", "-H", "Upload-Draft-Interop-Version: 6"]
    /// No instance is killed here: a lock need not run out fast (the cluster's 4 s, on a loaded machine,
    /// leaves a writer less than the third of it it needs, and it answers 423).
    static let lock = ["--lock-seconds", "30"]

    /// What S3 holds: every key of the bucket, and the multipart uploads still open.
    static func stored(_ cluster: S3ServeCluster) async throws -> (keys: [String], open: Int) {
        (try await cluster.moto.keys(cluster.bucket).sorted(), try await cluster.moto.uploads(cluster.bucket).count)
    }

    @Test(
        """
        --htpasswd: 401 for anonymous and wrong logins, uploads of every protocol among them, and nothing reaches S3; \
        a login uploads; --public-read lets GET through
        """
    )
    func logins() async throws {
        let w = try Workspace()
        let htpasswd = try await ServeLoginTests.passwordFile(w)
        let digest = try makeRandomFile(path: w.path("www/up.bin"), size: 6 * Self.MiB + 1, seed: 3420)
        let cluster = try await S3ServeCluster(instances: 1, extra: Self.lock + ["--htpasswd", htpasswd])
        let base = "http://127.0.0.1:\(cluster.ports[0])"
        try await cluster.moto.put(cluster.bucket, cluster.key("hello.txt"), file: w.path("www/up.bin"))
        #expect(try await CurlExchange.run([base + "/hello.txt"]).status == 401)
        #expect(try await CurlExchange.run(["-u", "alice:not it", base + "/hello.txt"]).status == 401)
        #expect(try await CurlExchange.run(["-H", "Accept: text/html", base + "/"]).status == 401)
        let put = try await CurlExchange.run(["-u", "alice:not it", "-T", w.path("www/up.bin"), base + "/anon.bin"])
        #expect(put.status == 401)
        let draft = try await CurlExchange.run(
            Self.draft + [
                "-H", "Upload-Complete: ?1", "-X", "POST", "-T", w.path("www/up.bin"), base + "/anon-draft.bin",
            ])
        #expect(draft.status == 401)
        #expect(!draft.interim.contains { $0.status == 104 })
        let tus = try await CurlExchange.run([
            "-X", "POST", "-H", "Tus-Resumable: 1.0.0", "-H", "Upload-Length: 100", base + "/tus.bin",
        ])
        #expect(tus.status == 401 && tus["location"] == nil)
        let before = try await Self.stored(cluster)
        #expect(before.keys == [cluster.key("hello.txt")] && before.open == 0, "\(before)")

        let withLogin = try await CurlExchange.run([
            "-u", "carol:sha512 secret", "-T", w.path("www/up.bin"), base + "/up.bin",
        ])
        #expect(withLogin.status == 201, "\(cluster.instances[0].stderrSoFar)")
        #expect(try await cluster.moto.sha256(cluster.bucket, cluster.key("up.bin")) == digest)
        let got = try await CurlExchange.run(["-u", "bob:sha256 secret", base + "/hello.txt"])
        #expect(got.status == 200 && sha256(got.body) == digest)
        let log = cluster.instances[0].stderrSoFar
        #expect(log.contains("login failed for user \"alice\""), "\(log)")
        #expect(!log.contains("not it") && !log.contains("secret"), "\(log)")

        let open = try await S3ServeCluster(instances: 1, extra: Self.lock + ["--htpasswd", htpasswd, "--public-read"])
        let openBase = "http://127.0.0.1:\(open.ports[0])"
        try await open.moto.put(open.bucket, open.key("hello.txt"), file: w.path("www/up.bin"))
        let anonymous = try await CurlExchange.run([openBase + "/hello.txt"])
        #expect(anonymous.status == 200 && sha256(anonymous.body) == digest)
        #expect(try await CurlExchange.run(["--data-binary", "x", "-X", "PUT", openBase + "/new.txt"]).status == 401)
        #expect(try await open.moto.keys(open.bucket) == [open.key("hello.txt")])
    }

    @Test(
        """
        --max-upload-size: 413 for a sized, a chunked, a draft and a tus upload, nothing left on S3 (a part already \
        stored is aborted); within the limit it lands
        """
    )
    func maxUploadSize() async throws {
        let w = try Workspace()
        _ = try makeRandomFile(path: w.path("www/big.bin"), size: 8 * Self.MiB, seed: 3421)
        let smallDigest = try makeRandomFile(path: w.path("www/small.bin"), size: 500_000, seed: 3422)
        let cluster = try await S3ServeCluster(instances: 1, extra: Self.lock + ["--max-upload-size", "6M"])
        let base = "http://127.0.0.1:\(cluster.ports[0])"
        let sized = try await CurlExchange.run(["-T", w.path("www/big.bin"), base + "/sized.bin"])
        #expect(sized.status == 413)
        // No length announced: a 5 MiB part goes to S3 before the sixth MiB is passed; then 413.
        let chunked = try await CurlExchange.run([
            "-H", "Transfer-Encoding: chunked", "-T", w.path("www/big.bin"), base + "/chunked.bin",
        ])
        #expect(chunked.status == 413 || chunked.exit != 0, "\(chunked.status) \(chunked.exit)")
        let draft = try await CurlExchange.run(
            Self.draft + ["-H", "Upload-Complete: ?1", "-X", "POST", "-T", w.path("www/big.bin"), base + "/draft.bin"])
        #expect(draft.status == 413 && draft["upload-limit"] == "max-size=\(6 * Self.MiB)")
        #expect(!draft.interim.contains { $0.status == 104 })
        let tus = try await CurlExchange.run([
            "-X", "POST", "-H", "Tus-Resumable: 1.0.0", "-H", "Upload-Length: \(8 * Self.MiB)", base + "/tus.bin",
        ])
        #expect(tus.status == 413)
        // The refused uploads' records, tails and multipart uploads are removed once their requests settle.
        var now = try await Self.stored(cluster)
        for _ in 0..<40 where !now.keys.isEmpty || now.open > 0 {
            try await Task.sleep(for: .milliseconds(500))
            now = try await Self.stored(cluster)
        }
        #expect(now.keys.isEmpty && now.open == 0, "\(now)")
        let log = cluster.instances[0].stderrSoFar
        #expect(log.contains("chunked.bin refused: 413"), "\(log)")

        let small = try await CurlExchange.run(
            Self.draft + [
                "-H", "Upload-Complete: ?1", "-X", "POST", "-T", w.path("www/small.bin"), base + "/small.bin",
            ])
        #expect(small.status == 201)
        #expect(small.interim.first { $0.status == 104 }?["upload-limit"] == "max-size=\(6 * Self.MiB)")
        #expect(try await cluster.moto.sha256(cluster.bucket, cluster.key("small.bin")) == smallDigest)
    }

    @Test(
        """
        --max-uploads 1: a second upload is 503 with Retry-After while the first runs; the slot comes back when it \
        lands
        """
    )
    func maxUploads() async throws {
        let w = try Workspace()
        let digest = try makeRandomFile(path: w.path("www/f.bin"), size: 4_000_000, seed: 3423)
        let cluster = try await S3ServeCluster(instances: 1, extra: Self.lock + ["--max-uploads", "1"])
        let base = "http://127.0.0.1:\(cluster.ports[0])"
        async let slow = CurlExchange.run(["--limit-rate", "200K", "-T", w.path("www/f.bin"), base + "/slow.bin"])
        // The first upload holds its slot once its multipart upload exists on S3.
        var open = 0
        let deadline = ContinuousClock.now + .seconds(180)
        while open == 0 && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(300))
            open = try await cluster.moto.uploads(cluster.bucket).count
        }
        #expect(open == 1)
        let refused = try await CurlExchange.run(["-T", w.path("www/f.bin"), base + "/second.bin"])
        #expect(refused.status == 503)
        #expect(refused["retry-after"].flatMap { Int($0) } != nil)
        let tus = try await CurlExchange.run([
            "-X", "POST", "-H", "Tus-Resumable: 1.0.0", "-H", "Upload-Length: 10", base + "/tus.bin",
        ])
        #expect(tus.status == 503)
        #expect(try await slow.status == 201)
        let after = try await CurlExchange.run(["-T", w.path("www/f.bin"), base + "/second.bin"])
        #expect(after.status == 201)
        #expect(try await cluster.moto.sha256(cluster.bucket, cluster.key("second.bin")) == digest)
        #expect(try await cluster.moto.sha256(cluster.bucket, cluster.key("slow.bin")) == digest)
        #expect(try await cluster.moto.keys(cluster.bucket).filter { !$0.contains(".resumectl-uploads") }.count == 2)
    }

    @Test(
        """
        --max-uploads on two instances: an upload created on one and finished through the other gives its slot back \
        to the first once it reads the upload again
        """
    )
    func slotFreedByAnotherInstance() async throws {
        let cluster = try await S3ServeCluster(instances: 2, extra: Self.lock + ["--max-uploads", "1"])
        let w = try Workspace()
        _ = try makeRandomFile(path: w.path("www/t.bin"), size: 1000, seed: 3424)
        let first = "http://127.0.0.1:\(cluster.ports[0])"
        let second = "http://127.0.0.1:\(cluster.ports[1])"
        let created = try await CurlExchange.run([
            "-X", "POST", "-H", "Tus-Resumable: 1.0.0", "-H", "Upload-Length: 1000", first + "/t.bin",
        ])
        let location = try #require(created["location"], "\(created.heads)")
        let path =
            location.hasPrefix("http") ? String(location.drop { $0 != "/" }.dropFirst(2).drop { $0 != "/" }) : location
        #expect(
            try await CurlExchange.run([
                "-X", "POST", "-H", "Tus-Resumable: 1.0.0", "-H", "Upload-Length: 10", first + "/u.bin",
            ]).status == 503)
        let patched = try await CurlExchange.run([
            "-X", "PATCH", "-H", "Tus-Resumable: 1.0.0", "-H", "Upload-Offset: 0", "-H",
            "Content-Type: application/offset+octet-stream",
            "--data-binary", "@" + w.path("www/t.bin"), second + path,
        ])
        #expect(patched.status == 204)
        // The first instance hears of the completion when it next reads the upload (a client's HEAD).
        let head = try await CurlExchange.run(["-I", "-H", "Tus-Resumable: 1.0.0", first + path])
        #expect(head.status == 404 || head.status == 200, "\(head.heads)")
        let next = try await CurlExchange.run([
            "-X", "POST", "-H", "Tus-Resumable: 1.0.0", "-H", "Upload-Length: 10", first + "/u.bin",
        ])
        #expect(next.status == 201, "\(cluster.instances[0].stderrSoFar)")
    }
}
