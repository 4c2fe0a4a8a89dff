import Foundation
import ResumeKit
import Testing

@testable import ResumeServer

/// `serve --store s3://` showing its prefix as a folder, against moto with signatures checked (listings
/// under a prefix and keys holding `+`, `%`, spaces or non-ASCII letters verify there since
/// scripts/moto_server.py checks what was sent): the page, plain PUT, 409 unless `--overwrite`, HEAD,
/// the completed object's CRC32C, and the expiry sweep.
@Suite("serve S3 store as a folder")
struct ServeS3FolderTests {
    static let MiB = 1 << 20

    /// S3's composite checksum of an object uploaded in parts of `sizes` bytes: the CRC32C of the parts'
    /// CRC32Cs, base64 (what `HeadObject` with `x-amz-checksum-mode: ENABLED` reports before its `-N`).
    static func compositeCRC32C(_ data: Data, parts sizes: [Int]) -> String {
        var crcs: [UInt8] = []
        var start = 0
        for size in sizes {
            crcs += DigestAlgorithm.crc32c.digest(Array(data[start..<start + size]))
            start += size
        }
        return Data(DigestAlgorithm.crc32c.digest(crcs)).base64EncodedString()
    }

    @Test(
        """
        the prefix as a folder: the page, plain PUT of awkward names, 409 unless --overwrite, HEAD, the object's \
        CRC32C, expiry aborts
        """
    )
    func folderPlainAndExpiry() async throws {
        let cluster = try await S3ServeCluster(instances: 1, extra: ["--upload-timeout", "2", "--lock-seconds", "30"])
        let w = try Workspace()
        let base = "http://127.0.0.1:\(cluster.ports[0])"
        let small = try makeRandomFile(path: w.path("www/a.txt"), size: 1000, seed: 3407)
        let large = try makeRandomFile(path: w.path("www/b.bin"), size: 6 * Self.MiB + 3, seed: 3408)
        func curl(_ args: [String]) async throws -> ProcessResult { try await runProcess("curl", ["-sS"] + args) }
        // `x+y 50% Grüße.txt`: a key S3 signs with %2B, %25 and UTF-8 escapes.
        let awkward = "x+y 50% Grüße.txt"
        let awkwardURL = base + "/docs/" + FolderListing.percentEncoded(awkward)
        #expect(
            try await curl(["-o", "/dev/null", "-w", "%{http_code}", "-T", w.path("www/a.txt"), base + "/docs/a.txt"])
                .stdout == "201")
        #expect(
            try await curl([
                "-o", "/dev/null", "-w", "%{http_code}", "-T", w.path("www/b.bin"), base + "/docs/sub/b.bin",
            ]).stdout == "201")
        #expect(
            try await curl(["-o", "/dev/null", "-w", "%{http_code}", "-T", w.path("www/a.txt"), awkwardURL]).stdout
                == "201",
            "\(cluster.instances[0].stderrSoFar)")
        #expect(try await cluster.moto.sha256(cluster.bucket, cluster.key("docs/a.txt")) == small)
        #expect(try await cluster.moto.sha256(cluster.bucket, cluster.key("docs/sub/b.bin")) == large)
        #expect(try await cluster.moto.sha256(cluster.bucket, cluster.key("docs/" + awkward)) == small)
        // Completed with CRC32C declared: one 5 MiB part while the body ran, the rest (the tail) as the
        // last part. moto 5.2.1 neither checks nor lists part checksums; it computes its own composite
        // from the parts' bytes, which must be the one S3 would give these parts.
        let bytes = try Data(contentsOf: URL(fileURLWithPath: w.path("www/b.bin")))
        let checksum = try await cluster.moto.checksum(cluster.bucket, cluster.key("docs/sub/b.bin"))
        #expect(
            checksum?.split(separator: "-").first.map(String.init)
                == Self.compositeCRC32C(bytes, parts: [5 * Self.MiB, Self.MiB + 3]),
            "\(String(describing: checksum))")
        let again = try await curl([
            "-o", "/dev/null", "-w", "%{http_code}", "-T", w.path("www/b.bin"), base + "/docs/a.txt",
        ])
        #expect(again.stdout == "409", "an object is never replaced without --overwrite: \(again)")
        #expect(try await cluster.moto.sha256(cluster.bucket, cluster.key("docs/a.txt")) == small)
        let head = try await curl(["-I", base + "/docs/sub/b.bin"])
        let etag = try await cluster.moto.head(cluster.bucket, cluster.key("docs/sub/b.bin")).etag
        #expect(
            head.stdout.contains("200") && head.stdout.contains("Content-Length: \(6 * Self.MiB + 3)")
                && head.stdout.contains(etag), "\(head)")
        #expect(try await curl(["-o", w.path("out/b"), base + "/docs/sub/b.bin"]).status == 0)
        #expect(try sha256(file: w.path("out/b")) == large)
        #expect(try await curl(["-o", w.path("out/x"), awkwardURL]).status == 0)
        #expect(try sha256(file: w.path("out/x")) == small)
        let root = try await curl(["-H", "Accept: text/html", base + "/"]).stdout
        #expect(root.contains("docs/") && !root.contains(".resumectl-uploads"), "\(root)")
        let docs = try await curl(["-H", "Accept: text/html", base + "/docs/"]).stdout
        #expect(
            docs.contains("a.txt") && docs.contains("sub/") && docs.contains("Grüße"),
            "\(docs) \(cluster.instances[0].stderrSoFar)")
        #expect(
            try await curl(["-o", "/dev/null", "-w", "%{http_code}", "-H", "Accept: text/html", base + "/docs"]).stdout
                == "301")
        #expect(try await curl(["-o", "/dev/null", "-w", "%{http_code}", base + "/docs/nothing"]).stdout == "404")
        // An upload left unfinished expires: its multipart upload is aborted, its record and tail deleted.
        let created = try await curl([
            "-D", "-", "-o", "/dev/null", "-X", "POST", "-H", "Tus-Resumable: 1.0.0",
            "-H", "Upload-Length: 100000", base + "/docs/late.bin",
        ])
        #expect(created.stdout.contains("201"), "\(created)")
        let deadline = ContinuousClock.now + .seconds(30)
        while try await !cluster.moto.uploads(cluster.bucket).isEmpty, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(500))
        }
        #expect(try await cluster.moto.uploads(cluster.bucket).isEmpty, "\(cluster.instances[0].stderrSoFar)")
        // The sweep says what it aborted (the 201 said the multipart upload had been created).
        let log = cluster.instances[0].stderrSoFar
        #expect(log.contains("upload /docs/late.bin expired, its multipart upload aborted"), "\(log)")
        #expect(!log.contains("cannot list"), "\(log)")
        let left = try await cluster.moto.keys(cluster.bucket).filter { $0.contains(".resumectl-uploads") }
        #expect(left.isEmpty, "\(left)")
    }

    @Test(
        """
        after a burst of GETs the instance's descriptors come back to their idle count: idle libcurl sessions go \
        (make soak-serve found them kept)
        """
    )
    func descriptorsAfterABurst() async throws {
        // --upload-timeout 10: the sweep, which lets idle sessions go, runs every 5 s.
        let cluster = try await S3ServeCluster(instances: 1, extra: ["--upload-timeout", "10"])
        try await cluster.moto.putRandom(cluster.bucket, cluster.key("big.bin"), size: 4 * Self.MiB)
        let pid = cluster.instances[0].pid
        func descriptors() throws -> Int {
            try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count
        }
        let idle = try descriptors()
        let url = "http://127.0.0.1:\(cluster.ports[0])/big.bin"
        // Twelve GETs at once: twelve S3 requests at once, each on a libcurl session of its own.
        let results = try await withThrowingTaskGroup(of: ProcessResult.self) { group in
            for _ in 0..<12 {
                group.addTask { try await runProcess("curl", ["-sf", "-o", "/dev/null", "--limit-rate", "2M", url]) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.allSatisfy { $0.status == 0 }, "\(results)")
        let afterBurst = try descriptors()
        #expect(afterBurst > idle, "the burst left sessions (and their descriptors) behind: \(idle) -> \(afterBurst)")
        try await eventually(timeout: .seconds(30)) { try descriptors() <= idle }
        #expect(try descriptors() == idle)
    }
}
