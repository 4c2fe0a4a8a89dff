import Foundation
import Testing

/// `make soak` for `resumectl sync` (issue #55): a tree of 2,000 files (RESUMECTL_SOAK_SYNC_FILES changes the
/// count; names with spaces, `#`, `%`, `+`, non-ASCII letters; most a few KiB, some 256 KiB, a few of 40 MiB so
/// that a fault lands inside a file) synced to moto, to `serve`, and down from nginx's autoindex and `serve`'s
/// listing. Then 10 % of the source changes (same size, new content, a later time), 5 % is added and 5 %
/// removed: `--dry-run` lists exactly those actions, and `sync --delete` through a counting proxy is killed
/// with SIGKILL twice and cut at the proxy once, each when a share of the changed bytes crossed it, and ends
/// on its own. DST then equals SRC by SHA-256 with no extra file, under 1.15× the changed and added bytes
/// crossed the proxy (to moto too, where a fault costs the parts in flight: S3 keeps a part whole or not at all),
/// and one more `sync` sends no file's body.
@Suite(.enabled(if: ProcessInfo.processInfo.environment["RESUMECTL_SOAK"] == "1"), .serialized)
struct SyncSoakTests {
    static let count = Int(ProcessInfo.processInfo.environment["RESUMECTL_SOAK_SYNC_FILES"] ?? "") ?? 2_000
    static let big = 40 << 20

    /// The source tree: relative path → SHA-256. File `n`'s size: 40 MiB for the last few, 256 KiB for every
    /// twentieth, else 1–32 KiB; its time two hours ago (a copy made now is later than its source).
    static func makeTree(_ root: String) throws -> [String: String] {
        let bigs = max(2, count / 250)
        var files: [String: String] = [:]
        for n in 0..<count {
            let names = FolderUploadTests.hardNames
            let folders = (0..<(n % 4)).map { "\(names[($0 + n) % names.count]) \($0 % 3)" }
            let relative = (folders + ["\(names[n % names.count]) \(n).bin"]).joined(separator: "/")
            let size = n >= count - bigs ? big : n % 20 == 0 ? 256 << 10 : 1_024 * (1 + n % 32)
            files[relative] = try make(root, relative, size: size, seed: UInt64(n + 1))
            try FileManager.default.setAttributes(
                [.modificationDate: Date().addingTimeInterval(-7_200)], ofItemAtPath: root + "/" + relative)
        }
        return files
    }

    static func make(_ root: String, _ relative: String, size: Int, seed: UInt64) throws -> String {
        let path = root + "/" + relative
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        return try makeRandomFile(path: path, size: size, seed: seed)
    }

    static func size(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? 0
    }

    /// 10 % of the files rewritten (half the 40 MiB ones among them), 5 % removed, 5 % added (one of 40 MiB);
    /// returns the plan that makes, sorted, and the bytes it sends.
    static func change(_ root: String, _ files: inout [String: String]) throws -> (plan: [String], bytes: Int) {
        Thread.sleep(forTimeInterval: 1.1)  // the copies' times (S3's, serve's) are whole seconds
        let bigs = files.keys.sorted().filter { size(root + "/" + $0) == big }
        var plan: [String] = []
        var bytes = 0
        var changed = Array(bigs.prefix(bigs.count / 2))
        let rest = files.keys.sorted().filter { size(root + "/" + $0) != big }
        changed += rest.enumerated().filter { $0.offset % 10 == 3 }.map(\.element).prefix(count / 10 - changed.count)
        for (k, name) in changed.enumerated() {
            files[name] = try SyncTests.rewrite(root + "/" + name, seed: UInt64(10_000 + k))
            bytes += size(root + "/" + name)
            plan.append("replace \(name)")
        }
        for name in rest.enumerated().filter({ $0.offset % 20 == 7 }).map(\.element).prefix(count / 20) {
            try FileManager.default.removeItem(atPath: root + "/" + name)
            files[name] = nil
            plan.append("delete \(name)")
        }
        for k in 0..<(count / 20) {
            let names = FolderUploadTests.hardNames
            let relative = "added \(names[k % 6])/new \(k) \(names[(k + 1) % 6]).bin"
            let size = k == 0 ? big : 1_024 * (1 + k % 32)
            files[relative] = try make(root, relative, size: size, seed: UInt64(20_000 + k))
            bytes += size
            plan.append("copy \(relative)")
        }
        return (plan.sorted(), bytes)
    }

    /// Runs `args` three times: killed with SIGKILL once `crossed()` passed 30 % and 60 % of `bytes` (alive
    /// then), and cut at the proxy at 85 % in the third, which ends on its own (retrying the cut).
    static func faulted(
        _ start: () throws -> RunningProcess, proxy: FaultProxy, crossed: @escaping () -> Int, bytes: Int
    ) async throws -> (ProcessResult, kills: Int, cuts: Int) {
        let base = crossed()
        func reach(_ share: Double, _ p: RunningProcess) async throws -> Bool {
            while p.isRunning, Double(crossed() - base) < share * Double(bytes) {
                try await Task.sleep(for: .milliseconds(5))
            }
            return p.isRunning
        }
        var kills = 0
        for share in [0.3, 0.6] {
            let p = try start()
            guard try await reach(share, p) else { return (try await p.wait(), kills, 0) }
            p.send(signal: SIGKILL)
            let killed = try await p.wait()
            #expect(killed.signaled, "\(killed)")
            kills += 1
        }
        let p = try start()
        var cuts = 0
        if try await reach(0.85, p) {
            proxy.cutAll()
            cuts += 1
        }
        return (try await p.wait(timeout: .seconds(1800)), kills, cuts)
    }

    @Test(arguments: ["to moto", "to serve", "from nginx", "from serve"]) func syncSurvivesKillsAndCuts(
        _ peer: String
    ) async throws {
        let s = try await S3Scene()
        let w = s.w
        let up = peer.hasPrefix("to ")
        let src = up ? w.path("src") : w.path("www/tree")
        var files = try Self.makeTree(src)
        var serve: RunningProcess?
        var nginx: NginxServer?
        defer { serve?.send(signal: SIGKILL) }
        var port = s.moto.port
        if peer.hasSuffix("serve") {
            try w.dir.subdirectory(up ? "served" : "www")
            let started = try await ServeProcess.start(folder: w.path(up ? "served" : "www"), ["--overwrite"])
            (serve, port) = (started.0, started.1)
        } else if peer == "from nginx" {
            nginx = try await NginxServer(root: w.path("www"), serverDirectives: "autoindex on;")
            port = nginx!.port
        }
        // 8 MB/s a connection: a kill loses what came since the last checkpoint (0.2 s here) of a download.
        let proxy = try FaultProxy(
            upstreamPort: port, plan: Array(repeating: .throttle(bytesPerSecond: 8 << 20), count: 100_000))
        let endpoint = ["--endpoint-url", proxy.baseURL]
        let (remote, local): (String, String) =
            switch peer {
            case "to moto": (s.url("dest/"), "")
            case "to serve": (proxy.url(for: "dest/"), "")
            default: (proxy.url(for: "tree/"), w.path("local"))
            }
        let sides = up ? [src, remote] : [remote, local]
        let extra = ["--retry-delay", "0.05", "--checkpoint-interval", "0.2"] + (peer == "to moto" ? endpoint : [])
        func run(_ more: [String]) async throws -> ProcessResult {
            try await s.run(["sync"] + sides + ["--delete"] + extra + more, timeout: .seconds(3600))
        }
        func stored() async throws -> [String: String] {
            switch peer {
            case "to moto":
                return Dictionary(
                    uniqueKeysWithValues: try await s.moto.digests(s.bucket).map {
                        (String($0.key.dropFirst(5)), $0.value)
                    })
            case "to serve": return try SyncTests.digests(w.path("served/dest"))
            default: return try SyncTests.digests(local)
            }
        }
        func crossed() -> Int { up ? proxy.bytesUpstream : proxy.bytesDownstream }

        let first = try await run(["-q"])
        #expect(first.status == 0, "\(first)")
        #expect(try await stored() == files, "the first sync")

        let (expected, bytes) = try Self.change(src, &files)
        let dry = try await run(["--dry-run", "--json"])
        #expect(dry.status == 0, "\(dry)")
        #expect(SyncTests.plan(dry.stdout).filter { !$0.hasPrefix("keep ") }.sorted() == expected, "\(dry.stdout)")

        let before = crossed()
        let (r, kills, cuts) = try await Self.faulted(
            { try s.start(["sync"] + sides + ["--delete", "-q", "--retries", "inf"] + extra) }, proxy: proxy,
            crossed: crossed, bytes: bytes)
        let sent = crossed() - before
        let now = try await stored()
        SoakTests.row(
            "sync \(peer), kill+cut", faults: kills + cuts, finished: r.status == 0, resent: sent - bytes,
            mismatch: now != files)
        print(
            "soak | sync \(peer): \(sent) bytes crossed the proxy for \(bytes) changed and added "
                + "(\(String(format: "%.3f", Double(sent) / Double(bytes)))×)")
        #expect(r.status == 0, "\(r)")
        #expect(kills == 2 && cuts == 1, "kills \(kills), cuts \(cuts)")
        #expect(now == files, "every file equal, none missing, none extra")
        #expect(Double(sent) < 1.15 * Double(bytes), "\(sent) bytes crossed for \(bytes)")
        if peer == "to moto" {
            // Each fault costs at most the parts then in flight, the batch's --parallel 4 requests, and no part
            // that arrived is sent again.
            let parts = proxy.connections.flatMap(\.requestLines).filter {
                $0.hasPrefix("PUT ") && $0.contains("partNumber=")
            }
            let again = parts.count - Set(parts).count
            #expect(again <= (kills + cuts) * 4, "\(again) parts sent again")
        }
        if let serve { #expect(serve.isRunning, "serve lived: \(serve.stderrSoFar.suffix(2000))") }

        let lines = proxy.connections.flatMap(\.requestLines).count
        let again = try await run(["--json"])
        #expect(again.status == 0, "\(again)")
        #expect(SyncTests.plan(again.stdout).allSatisfy { $0.hasPrefix("keep ") }, "\(again.stdout)")
        let requests = proxy.connections.flatMap(\.requestLines).dropFirst(lines)
        // Up: only listings, HEADs and OPTIONS; down: only listings (a folder's URL) and HEADs.
        let bodies = requests.filter { line in
            up
                ? !["GET ", "HEAD ", "OPTIONS "].contains { line.hasPrefix($0) }
                : !line.contains("/ HTTP/") && !line.hasPrefix("HEAD ")
        }
        #expect(bodies.isEmpty, "no file's body in the last sync: \(bodies.prefix(5))")
    }
}
