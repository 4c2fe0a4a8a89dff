import Foundation
import Testing

/// A batch's small files: one request each and nothing on disk but the batch's ledger (no token, lock or
/// result record); a SIGKILL among them sends no finished file again; on S3 one `PutObject` each beside a
/// large file's multipart upload (whose parts share the batch's budget of requests: see UploadBatchTests).
extension FolderUploadTests {
    /// `count` files of 4 KiB (and some empty) in three folders: relative path → SHA-256.
    static func smallTree(_ root: String, count: Int) throws -> [String: String] {
        var files: [String: String] = [:]
        for i in 0..<count {
            let relative = "d\(i % 3)/f \(i).bin"
            try FileManager.default.createDirectory(atPath: root + "/d\(i % 3)", withIntermediateDirectories: true)
            files[relative] = try makeRandomFile(
                path: root + "/" + relative, size: i % 50 == 0 ? 0 : 4096, seed: UInt64(i + 1))
        }
        return files
    }

    /// The request lines that carried a file's body (`POST`, `PUT`, `PATCH`), by the path they went to.
    static func bodies(_ proxy: FaultProxy) -> [String: Int] {
        var counts: [String: Int] = [:]
        for line in proxy.connections.flatMap(\.requestLines) {
            let parts = line.split(separator: " ")
            guard parts.count == 3, ["POST", "PUT", "PATCH"].contains(parts[0]) else { continue }
            counts[String(parts[1]), default: 0] += 1
        }
        return counts
    }

    @Test(arguments: ["ietf", "tus"]) func smallFilesLeaveNothingOnDiskAndAKillResendsNoFinishedFile(choice: String)
        async throws
    {
        let w = try Workspace()
        let root = w.path("www/small")
        let files = try Self.smallTree(root, count: 300)
        try w.dir.subdirectory("served")
        let (serve, port) = try await ServeDurabilityTests.startServe(folder: w.path("served"), port: 0)
        defer { serve.send(signal: SIGKILL) }
        let proxy = try FaultProxy(upstreamPort: port)
        let target = proxy.url(for: "s/")
        let p = try w.start(["upload", root, target, "--json", "--protocol", choice])
        let first = try await p.waitForLine(timeout: .seconds(60)) { $0.contains("\"started\"") }
        let id = try #require(events(first).first?["token"] as? String)
        var completed = 0
        _ = try await p.waitForLine(timeout: .seconds(120)) { line in
            if line.contains("\"completed\"") { completed += 1 }
            return completed >= 100
        }
        // While the batch runs: no token, no lock, no result record for any of its files.
        #expect(try w.tokens().isEmpty)
        let locks = ((try? FileManager.default.contentsOfDirectory(atPath: w.state + "/tokens")) ?? []).filter {
            $0.hasPrefix("u-")
        }
        #expect(locks.isEmpty, "\(locks)")
        p.send(signal: SIGKILL)
        #expect(try await p.wait().signaled)
        let records = ((try? FileManager.default.contentsOfDirectory(atPath: w.state + "/results")) ?? []).filter {
            $0.hasPrefix("u-")
        }
        #expect(records.isEmpty, "\(records)")

        let r = try await w.run(["resume", id, "--json"], timeout: .seconds(300))
        #expect(r.status == 0, "\(r)")
        for (relative, digest) in files {
            #expect(try sha256(file: w.path("served/s/") + relative) == digest, "\(relative)")
        }
        // A file whose body passed the proxy twice was in flight at the kill (at most --parallel 4 of them);
        // one that had arrived but whose ledger line was not yet synced is asked about (HEAD), not sent.
        let twice = Self.bodies(proxy).filter { $0.value > 1 }
        #expect(twice.count <= 4, "sent again: \(twice.keys.sorted())")
        let heads = proxy.connections.flatMap(\.requestLines).filter { $0.hasPrefix("HEAD ") }.count
        #expect(heads <= 64 + 8, "only the files claimed as begun are asked about: \(heads) HEADs")
        #expect(try w.tokens().isEmpty)
    }

    @Test func smallFilesToS3AreOnePutObjectEach() async throws {
        let s = try await S3Scene()
        let root = s.w.path("www/mixed")
        var files = try Self.smallTree(root, count: 40)
        // 25 MiB in 5 MiB parts, sent side by side within the batch's 8 requests.
        files["big.bin"] = try makeRandomFile(path: root + "/big.bin", size: 25 << 20, seed: 77)
        let proxy = try FaultProxy(upstreamPort: s.moto.port)
        let r = try await s.run(
            ["upload", root, s.url("m/"), "--endpoint-url", proxy.baseURL, "--part-size", "5M", "--parallel", "8"],
            timeout: .seconds(300))
        #expect(r.status == 0, "\(r)")
        let stored = try await s.moto.digests(s.bucket)
        #expect(stored == Dictionary(uniqueKeysWithValues: files.map { ("m/" + $0.key, $0.value) }))
        let lines = proxy.connections.flatMap(\.requestLines)
        let puts = lines.filter { $0.hasPrefix("PUT ") && !$0.contains("uploadId=") }
        #expect(puts.count == files.count - 1, "one PutObject per small file: \(puts.count)")
        #expect(
            lines.filter { $0.hasPrefix("POST ") && $0.contains("?uploads") }.count == 1,
            "a multipart upload for the large file only")
        #expect(lines.filter { $0.contains("uploadId=") && $0.hasPrefix("PUT ") }.count == 5)
        #expect(try s.w.tokens().isEmpty)
    }
}
