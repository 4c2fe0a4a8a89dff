import Foundation
import Testing

/// `make soak`: the crash-safety faults at scale (RESUMECTL_SOAK=1). Prints a table of faults injected,
/// transfers finished, bytes sent twice and mismatches (which must be 0).
@Suite(.enabled(if: ProcessInfo.processInfo.environment["RESUMECTL_SOAK"] == "1"), .serialized)
struct SoakTests: StreamPipelines {
    static let env = ProcessInfo.processInfo.environment
    static let size = Int(env["RESUMECTL_SOAK_SIZE"] ?? "") ?? 1 << 30
    static let cuts = Int(env["RESUMECTL_SOAK_CUTS"] ?? "") ?? 200
    static let kills = Int(env["RESUMECTL_SOAK_KILLS"] ?? "") ?? 50

    static func row(_ name: String, faults: Int, finished: Bool, resent: Int, mismatch: Bool) {
        let line = String(
            format: "soak | %-28@ | faults %5d | finished %@ | re-sent %12d B | mismatches %d",
            name as NSString, faults, finished ? "yes" : "NO ", resent, mismatch ? 1 : 0)
        print(line)
    }

    @Test func downloadCutManyTimes() async throws {
        let w = try Workspace()
        let digest = try makeRandomFile(path: w.path("www/f.bin"), size: Self.size, seed: 100)
        let nginx = try await NginxServer(root: w.path("www"))
        let step = Self.size / (Self.cuts + 1)
        let plan = Fault.randomCuts(
            seed: 100, count: Self.cuts, direction: .downstream, bytes: max(1, step / 2)...max(2, step))
        let proxy = try FaultProxy(upstreamPort: nginx.port, plan: plan)
        let r = try await w.run(
            ["download", proxy.url(for: "f.bin"), "-q", "--retries", "inf", "--retry-delay", "0.01"],
            timeout: .seconds(1800))
        let ok = r.status == 0 && (try? sha256(file: w.out + "/f.bin")) == digest
        // What reached the client (nginx counts what it wrote into socket buffers), less response heads.
        let heads = proxy.connectionCount * 300
        Self.row(
            "download, connection cuts", faults: proxy.connections.filter(\.triggered).count, finished: r.status == 0,
            resent: max(0, proxy.bytesDownstream - heads - Self.size), mismatch: r.status == 0 && !ok)
        #expect(ok, "\(r)")
    }

    @Test func downloadKilledManyTimes() async throws {
        let w = try Workspace()
        let digest = try makeRandomFile(path: w.path("www/f.bin"), size: Self.size, seed: 101)
        // Slow enough that the kills spread over the whole transfer.
        let nginx = try await NginxServer(root: w.path("www"), limitRate: max(1 << 20, Self.size / max(1, Self.kills)))
        let meter = try FaultProxy(upstreamPort: nginx.port)
        var rng = SeededGenerator(seed: 101)
        var kills = 0
        let url = meter.url(for: "f.bin")
        while kills < Self.kills {
            let p = try w.start(["download", url, "-q"])
            // Past the one-second checkpoint now and then, so that the transfer moves on between kills.
            try await Task.sleep(for: .milliseconds(Int.random(in: 500...2500, using: &rng)))
            guard p.isRunning else { break }
            p.send(signal: SIGKILL)
            _ = try await p.wait()
            kills += 1
        }
        let r = try await w.run(["download", url, "-q"], timeout: .seconds(1800))
        let ok = r.status == 0 && (try? sha256(file: w.out + "/f.bin")) == digest
        let heads = meter.connectionCount * 300
        Self.row(
            "download, kill -9", faults: kills, finished: r.status == 0,
            resent: max(0, meter.bytesDownstream - heads - Self.size),
            mismatch: r.status == 0 && !ok)
        #expect(ok, "\(r)")
    }

    @Test func uploadCutManyTimes() async throws {
        let w = try Workspace()
        let size = Self.size / 4
        let digest = try makeRandomFile(path: w.path("www/src.bin"), size: size, seed: 102)
        let peer = try await UploadPeer()
        let count = Self.cuts / 4
        let step = size / (count + 1)
        let plan = Fault.randomCuts(
            seed: 102, count: count, direction: .upstream, bytes: max(1, step / 2)...max(2, step)
        )
        .map { $0.throttled(bytesPerSecond: 200_000_000) }
        let proxy = try FaultProxy(upstreamPort: peer.port, plan: plan)
        peer.advertise(origin: proxy.baseURL)
        let r = try await w.run(
            [
                "upload", w.path("www/src.bin"), proxy.url(for: "u.bin"), "--interop-version", "6", "-q",
                "--retries", "inf", "--retry-delay", "0.01",
            ], timeout: .seconds(1800))
        let ok = r.status == 0 && (try? peer.storedSHA256("u.bin")) == digest
        let received = peer.requests.reduce(0) { $0 + $1.bodyBytes }
        Self.row(
            "upload, connection cuts", faults: proxy.connections.filter(\.triggered).count, finished: r.status == 0,
            resent: received - size, mismatch: r.status == 0 && !ok)
        #expect(ok, "\(r)")
    }

    @Test func uploadKilledManyTimes() async throws {
        let w = try Workspace()
        let size = Self.size / 4
        let digest = try makeRandomFile(path: w.path("www/src.bin"), size: size, seed: 103)
        let peer = try await UploadPeer()
        var rng = SeededGenerator(seed: 103)
        let count = max(1, Self.kills / 2)
        let rate = max(1 << 20, size / max(1, count))
        let args = ["upload", w.path("www/src.bin"), peer.url(for: "k.bin"), "--interop-version", "6", "-q"]
        var kills = 0
        var finishedEarly: ProcessResult?
        while kills < count {
            let p = try w.start(args + ["--limit-rate", String(rate)])
            try await Task.sleep(for: .milliseconds(Int.random(in: 500...2500, using: &rng)))
            guard p.isRunning else {
                finishedEarly = try await p.wait()
                break
            }
            p.send(signal: SIGKILL)
            _ = try await p.wait()
            kills += 1
        }
        let r: ProcessResult
        if let finishedEarly { r = finishedEarly } else { r = try await w.run(args, timeout: .seconds(1800)) }
        let ok = r.status == 0 && (try? peer.storedSHA256("k.bin")) == digest
        let received = peer.requests.reduce(0) { $0 + $1.bodyBytes }
        Self.row(
            "upload, kill -9", faults: kills, finished: r.status == 0, resent: received - size,
            mismatch: r.status == 0 && !ok)
        #expect(ok, "\(r)")
    }

    /// `cat FILE | resumectl upload -` killed with SIGKILL at seeded random moments and run again with the
    /// same stream, which is checked and continued; after every second kill the spool is also cut back to
    /// what its token calls synced, as a power loss may leave it (the spool is not fsynced while the stream
    /// flows), so that the replay has to refill it.
    @Test func streamKilledManyTimes() async throws {
        let w = try Workspace()
        let size = Self.size / 4
        let digest = try makeRandomFile(path: w.path("www/src.bin"), size: size, seed: 104)
        let peer = try await UploadPeer()
        var rng = SeededGenerator(seed: 104)
        let count = max(2, Self.kills / 2)
        let url = peer.url(for: "s.bin")
        let args = ["upload", "-", url, "-q", "--spool-max", "16M", "--limit-rate", String(max(1 << 20, size / count))]
        var (kills, cutBack) = (0, 0)
        var last: (ProcessResult, Int32)?
        while kills < count {
            let p = try startPipeline(w, producer: "cat '\(w.path("www/src.bin"))'", args)
            try await Task.sleep(for: .milliseconds(Int.random(in: 500...2500, using: &rng)))
            let pids = try await runProcess("/usr/bin/pgrep", ["-f", "upload - \(url)"]).stdout.split(separator: "\n")
                .compactMap { Int32($0) }
            guard p.isRunning, !pids.isEmpty else {
                let r = try await p.wait()
                last = (r, status(r))
                break
            }
            for pid in pids { kill(pid, SIGKILL) }
            _ = try await p.wait()
            kills += 1
            if kills % 2 == 0, let id = try w.tokens().first,
                let stream = (try w.token(id)["upload"] as? [String: Any])?["stream"] as? [String: Any],
                stream["ended"] as? Bool == false, let synced = stream["synced"] as? Int
            {
                #expect(truncate(w.state + "/spool/" + id, off_t(synced)) == 0)
                cutBack += 1
            }
        }
        let (r, code): (ProcessResult, Int32)
        if let last {
            (r, code) = last
        } else {
            (r, code) = try await pipeline(
                w, producer: "cat '\(w.path("www/src.bin"))'", Array(args.dropLast(2)), timeout: .seconds(1800))
        }
        let ok = code == 0 && (try? peer.storedSHA256("s.bin")) == digest
        let received = peer.requests.reduce(0) { $0 + $1.bodyBytes }
        Self.row(
            "stream, kill -9 (\(cutBack) cut back)", faults: kills, finished: code == 0, resent: received - size,
            mismatch: code == 0 && !ok)
        #expect(ok, "\(r)")
        #expect(cutBack > 0, "a spool was cut back at least once")
        #expect(try w.tokens().isEmpty && spoolFiles(w).isEmpty)
    }

    /// `serve` killed with SIGKILL five times at seeded random moments during a 1 GiB upload, and started
    /// again on the same port and folder each time. The client is held to 24 MiB/s so that the second
    /// of bytes a kill may cost stays a small part of the file (issue #31: under 1.2× in all).
    @Test(arguments: ["ietf", "tus"]) func serveKilledDuringUpload(protocol name: String) async throws {
        let w = try Workspace()
        let digest = try makeRandomFile(path: w.path("www/f.bin"), size: Self.size, seed: name == "tus" ? 104 : 105)
        let folder = try w.dir.subdirectory("served")
        var (serve, port) = try await ServeDurabilityTests.startServe(folder: folder, port: 0)
        defer { serve.send(signal: SIGKILL) }
        let meter = try FaultProxy(upstreamPort: port)
        let target = name == "tus" ? meter.url(for: "in/") : meter.url(for: "in/f.bin")
        let client = try w.start([
            "upload", w.path("www/f.bin"), target, "--protocol", name, "-q", "--limit-rate", "24M",
            "--retries", "inf", "--retry-delay", "0.1",
        ])
        defer { client.send(signal: SIGKILL) }
        var generator = SeededGenerator(seed: 31)
        let moments = (0..<5).map { Double($0) * 0.16 + 0.05 + Double(generator.next() % 100) / 1000 }
        var kills = 0
        for fraction in moments {
            try await eventually(timeout: .seconds(600)) {
                ServeDurabilityTests.storedBytes(folder) >= Int(Double(Self.size) * fraction)
            }
            guard serve.isRunning else { break }
            serve.send(signal: SIGKILL)
            _ = try await serve.wait(timeout: .seconds(30))
            kills += 1
            (serve, _) = try await ServeDurabilityTests.startServe(folder: folder, port: port)
        }
        let r = try await client.wait(timeout: .seconds(1800))
        let ok = r.status == 0 && (try? sha256(file: folder + "/in/f.bin")) == digest
        Self.row(
            "\(name) upload, serve killed", faults: kills, finished: r.status == 0,
            resent: max(0, meter.bytesUpstream - Self.size), mismatch: r.status == 0 && !ok)
        #expect(ok, "\(r)")
        #expect(kills == 5)
        #expect(Double(meter.bytesUpstream) < 1.2 * Double(Self.size), "\(meter.bytesUpstream)")
    }
}
