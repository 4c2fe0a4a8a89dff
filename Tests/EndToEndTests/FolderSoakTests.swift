import Foundation
import Testing

/// `make soak` for folders (issue #32): a tree of 2,000 files (1,500 × 4 KiB, 450 × 1 MiB, 50 × 40 MiB; four
/// folders deep; names with spaces, `#`, `%`, `+`, non-ASCII letters — to moto only the names its SigV4 check
/// takes) uploaded while the client is killed with SIGKILL three times and every connection is cut at the
/// proxy five times; the same command then finishes. Every object equals its source by SHA-256, none is
/// missing or extra, under 1.15× the tree's bytes crossed the proxy, and `--skip-existing` sends no body.
/// RESUMECTL_SOAK_FOLDER_SCALE (default 1) scales the file counts.
@Suite(.enabled(if: ProcessInfo.processInfo.environment["RESUMECTL_SOAK"] == "1"), .serialized)
struct FolderSoakTests {
    static let scale = Double(ProcessInfo.processInfo.environment["RESUMECTL_SOAK_FOLDER_SCALE"] ?? "") ?? 1

    static func makeTree(_ root: String, names: [String]) throws -> (files: [String: String], bytes: Int) {
        var files: [String: String] = [:]
        var bytes = 0
        let kinds = [(1_500, 4 << 10), (450, 1 << 20), (50, 40 << 20)]
        var n = 0
        for (count, size) in kinds {
            for _ in 0..<max(1, Int(Double(count) * scale)) {
                let folders = (0..<(n % 5)).map { "\(names[($0 + n) % names.count]) \($0 % 3)" }
                let relative = (folders + ["\(names[n % names.count]) \(n).bin"]).joined(separator: "/")
                let path = root + "/" + relative
                try FileManager.default.createDirectory(
                    atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
                files[relative] = try makeRandomFile(path: path, size: size, seed: UInt64(n + 1))
                bytes += size
                n += 1
            }
        }
        return (files, bytes)
    }

    /// Three runs killed at seeded moments, five cuts of every connection spread over them (retried without
    /// end), then a run to the end (with the default retries: a peer that died fails it instead of hanging).
    static func run(
        _ start: () throws -> RunningProcess, finish: () async throws -> ProcessResult, proxy: FaultProxy, seed: UInt64
    )
        async throws -> (ProcessResult, kills: Int, cuts: Int)
    {
        var rng = SeededGenerator(seed: seed)
        // A smaller tree ends sooner: the moments shrink with it, so that every fault lands mid-batch.
        let f = min(1, scale)
        func moment(_ range: ClosedRange<Double>) -> Duration {
            .milliseconds(max(50, Int(Double.random(in: range, using: &rng) * f * 1000)))
        }
        var kills = 0
        var cuts = 0
        for _ in 0..<3 {
            let p = try start()
            for _ in 0..<(cuts < 4 ? 2 : 1) where cuts < 5 {
                try await Task.sleep(for: moment(1...4))
                guard p.isRunning else { break }
                proxy.cutAll()
                cuts += 1
            }
            try await Task.sleep(for: moment(0.5...3))
            guard p.isRunning else { return (try await p.wait(), kills, cuts) }
            p.send(signal: SIGKILL)
            _ = try await p.wait()
            kills += 1
        }
        return (try await finish(), kills, cuts)
    }

    /// The tree down from nginx's autoindex (HTML or JSON) or `serve`'s JSON listing, with the same kills and
    /// cuts; `--skip-existing` afterwards fetches no file's body.
    @Test(arguments: ["nginx html", "nginx json", "serve"]) func folderDown(from peer: String) async throws {
        let w = try Workspace()
        let (files, bytes) = try Self.makeTree(w.path("www/tree"), names: FolderUploadTests.hardNames)
        var port = 0
        var nginx: NginxServer?
        var serve: RunningProcess?
        defer { serve?.send(signal: SIGKILL) }
        if peer == "serve" {
            (serve, port) = try await ServeDurabilityTests.startServe(folder: w.path("www"), port: 0)
        } else {
            nginx = try await NginxServer(
                root: w.path("www"),
                serverDirectives: peer == "nginx json" ? "autoindex on; autoindex_format json;" : "autoindex on;")
            port = nginx!.port
        }
        // 8 MB/s a connection, at the proxy: a kill loses what came since the last checkpoint (one second,
        // and its sync), which at loopback speed would be most of a 40 MiB file in flight.
        let proxy = try FaultProxy(
            upstreamPort: port, plan: Array(repeating: .throttle(bytesPerSecond: 8 << 20), count: 100_000))
        let args = ["download", proxy.url(for: "tree/"), "-o", w.path("dl"), "-q", "--retry-delay", "0.05"]
        let (r, kills, cuts) = try await Self.run(
            { try w.start(args + ["--retries", "inf"]) },
            finish: { try await w.run(args, timeout: .seconds(3600)) }, proxy: proxy, seed: 46)
        var mismatches = 0
        for (relative, digest) in files where (try? sha256(file: w.path("dl/") + relative)) != digest {
            mismatches += 1
        }
        let stored = try filesBelow(w.path("dl"))
        SoakTests.row(
            "folder from \(peer), kill+cut", faults: kills + cuts, finished: r.status == 0,
            resent: proxy.bytesDownstream - bytes,
            mismatch: mismatches > 0 || stored != Set(files.keys))
        #expect(r.status == 0, "\(r)")
        #expect(kills == 3 && cuts == 5, "kills \(kills), cuts \(cuts)")
        #expect(mismatches == 0 && stored == Set(files.keys))
        #expect(Double(proxy.bytesDownstream) < 1.15 * Double(bytes), "\(proxy.bytesDownstream) for \(bytes)")
        let before = proxy.connections.flatMap(\.requestLines).count
        let again = try await w.run(args + ["--skip-existing"], timeout: .seconds(1800))
        #expect(again.status == 0, "\(again)")
        let gets = proxy.connections.flatMap(\.requestLines).dropFirst(before).filter { !$0.contains("/ HTTP/") }
        #expect(gets.isEmpty, "no GET of a file's body: \(gets.prefix(5))")
    }

    @Test func folderToServe() async throws {
        let w = try Workspace()
        let root = w.path("www/tree")
        let (files, bytes) = try Self.makeTree(root, names: FolderUploadTests.hardNames)
        try w.dir.subdirectory("served")
        let (serve, port) = try await ServeDurabilityTests.startServe(folder: w.path("served"), port: 0)
        defer { serve.send(signal: SIGKILL) }
        let proxy = try FaultProxy(upstreamPort: port)
        let args = ["upload", root, proxy.url(for: "in/"), "-q", "--retry-delay", "0.05"]
        let (r, kills, cuts) = try await Self.run(
            { try w.start(args + ["--retries", "inf"]) },
            finish: { try await w.run(args, timeout: .seconds(3600)) }, proxy: proxy, seed: 32)
        #expect(serve.isRunning, "serve ended: \(serve.stderrSoFar.suffix(2000))")
        var mismatches = 0
        for (relative, digest) in files where (try? sha256(file: w.path("served/in/") + relative)) != digest {
            mismatches += 1
        }
        let stored = try FileManager.default.subpathsOfDirectory(atPath: w.path("served/in")).filter {
            $0.hasSuffix(".bin")
        }
        SoakTests.row(
            "folder to serve, kill+cut", faults: kills + cuts, finished: r.status == 0,
            resent: proxy.bytesUpstream - bytes,
            mismatch: mismatches > 0 || Set(stored) != Set(files.keys))
        #expect(r.status == 0, "\(r)")
        #expect(kills == 3 && cuts == 5, "kills \(kills), cuts \(cuts)")
        #expect(mismatches == 0 && Set(stored) == Set(files.keys))
        #expect(Double(proxy.bytesUpstream) < 1.15 * Double(bytes), "\(proxy.bytesUpstream) for \(bytes)")
        let before = proxy.bytesUpstream
        let again = try await w.run(args + ["--skip-existing"], timeout: .seconds(1800))
        #expect(again.status == 0, "\(again)")
        #expect(proxy.bytesUpstream - before < files.count * 1_000, "HEADs only: \(proxy.bytesUpstream - before)")
    }

    @Test func folderToMoto() async throws {
        let s = try await S3Scene()
        let root = s.w.path("www/tree")
        let (files, bytes) = try Self.makeTree(root, names: FolderUploadTests.hardNames)
        let proxy = try FaultProxy(upstreamPort: s.moto.port)
        let args = [
            "upload", root, s.url("in/"), "--endpoint-url", proxy.baseURL, "-q", "--retry-delay", "0.05",
            "--parallel", "8", "--part-size", "5M",
        ]
        let (r, kills, cuts) = try await Self.run(
            { try s.start(args + ["--retries", "inf"]) },
            finish: { try await s.run(args, timeout: .seconds(3600)) },
            proxy: proxy, seed: 33)
        let stored = try await s.moto.digests(s.bucket)
        let want = Dictionary(uniqueKeysWithValues: files.map { ("in/" + $0.key, $0.value) })
        SoakTests.row(
            "folder to moto, kill+cut", faults: kills + cuts, finished: r.status == 0,
            resent: proxy.bytesUpstream - bytes,
            mismatch: stored != want)
        #expect(r.status == 0, "\(r)")
        #expect(kills == 3 && cuts == 5, "kills \(kills), cuts \(cuts)")
        #expect(stored == want)
        #expect(Double(proxy.bytesUpstream) < 1.15 * Double(bytes), "\(proxy.bytesUpstream) for \(bytes)")
        let before = proxy.bytesUpstream
        let again = try await s.run(args + ["--skip-existing"], timeout: .seconds(1800))
        #expect(again.status == 0, "\(again)")
        #expect(proxy.bytesUpstream - before < files.count * 2_000, "HEADs only: \(proxy.bytesUpstream - before)")
    }
}
