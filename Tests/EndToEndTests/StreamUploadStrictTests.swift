import Foundation
import Testing

/// Stream uploads held to the letter of issue 13, beside `StreamUploadTests`: three cuts counted at the proxy
/// with what is sent again bounded, `--spool-max 32M` on a 200 MiB stream, a replay that differs only below
/// the spool (checked against the ledger) appending nothing, and version negotiation from 8 down to
/// NIOResumableUpload's 6 without a stall (the refused request's connection is not reused).
@Suite(.serialized) struct StreamUploadStrictTests: StreamPipelines {
    static let mib = 1 << 20

    func stream(_ w: Workspace, _ id: String) throws -> [String: Any] {
        try #require((try w.token(id)["upload"] as? [String: Any])?["stream"] as? [String: Any])
    }

    /// Waits for the `sha256sum` of a `tee >(sha256sum > FILE)` and returns the hex digest.
    func teeSum(_ path: String) async throws -> String {
        try await eventually(timeout: .seconds(10)) {
            ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").count >= 64
        }
        return String(try String(contentsOfFile: path, encoding: .utf8).prefix(64))
    }

    func startServe(_ folder: String) async throws -> (RunningProcess, String) {
        let (serve, port) = try await ServeProcess.start(folder: folder)
        return (serve, "http://127.0.0.1:\(port)")
    }

    @Test func streamThroughCutsToNIOResumableUpload() async throws {
        let w = try Workspace()
        let peer = try await UploadPeer()
        let proxy = try FaultProxy(
            upstreamPort: peer.port,
            plan: ([
                // libcurl keeps a connection for the next request: each cut ends one, whatever it carried. After a
                // cut libcurl may open a connection that carries nothing, which takes a fault: more are planned.
                .cutAfterUpstream(bytes: 3_000_000), .cutAfterUpstream(bytes: 5_000_000, reset: true),
                .cutAfterUpstream(bytes: 2_000_000), .cutAfterUpstream(bytes: 2_000_000),
                .cutAfterUpstream(bytes: 4_000_000),
                .pass, .pass, .pass, .pass, .pass, .pass, .pass, .pass,
            ] as [Fault]).map { $0.throttled(bytesPerSecond: 40_000_000) })
        peer.advertise(origin: proxy.baseURL)
        let sum = w.path("sum")
        let (r, status) = try await pipeline(
            w, producer: "head -c 64M /dev/urandom | tee >(sha256sum > '\(sum)')",
            ["upload", "-", proxy.url(for: "s.bin"), "--interop-version", "6", "--retry-delay", "0.05"])
        #expect(status == 0, "\(r)")
        #expect(r.stdout.contains(proxy.url(for: "s.bin")), "\(r)")
        #expect(try peer.storedSHA256("s.bin") == (try await teeSum(sum)))
        #expect(w.size(peer.storedPath("s.bin")) == 64 * Self.mib)
        let cuts = proxy.connections.filter(\.triggered).count
        let connections = proxy.connections.map { "\($0.index):\($0.triggered) up=\($0.bytesUpstream)" }
        #expect(
            cuts >= 3,
            "\(connections) \(peer.requests.map { "\($0.method) \($0.responseStatuses) body=\($0.bodyBytes)" })")
        // What the server had is not sent again: at most what was in flight at each cut.
        let received = peer.requests.reduce(0) { $0 + $1.bodyBytes }
        #expect(received <= 64 * Self.mib + cuts * 4 * Self.mib, "received \(received)")
        // Nothing is left behind: neither token nor spool.
        #expect(try w.tokens().isEmpty)
        #expect(spoolFiles(w).isEmpty, "\(spoolFiles(w))")
    }

    @Test func theSpoolStaysWithinSpoolMax() async throws {
        let w = try Workspace()
        let peer = try await UploadPeer()
        // 200 MiB at 50 MB/s: four seconds to watch the spool's disk use.
        let proxy = try FaultProxy(
            upstreamPort: peer.port, plan: Array(repeating: .throttle(bytesPerSecond: 50_000_000), count: 20))
        // From a file, not /dev/urandom: on a loaded machine urandom alone need not outrun 50 MB/s.
        let digest = try makeRandomFile(path: w.path("src.bin"), size: 200 * Self.mib, seed: 71)
        let p = try startPipeline(
            w, producer: "cat '\(w.path("src.bin"))'",
            ["upload", "-", proxy.url(for: "big.bin"), "--interop-version", "6", "--spool-max", "32M"])
        let (peak, samples) = try await spoolPeak(w, while: p, every: .milliseconds(10))
        let r = try await p.wait()
        #expect(status(r) == 0, "\(r)")
        #expect(samples > 50, "the spool was watched while it ran: \(samples)")
        // 32 MiB and one read buffer (256 KiB), and a filesystem block.
        #expect(peak <= 32 * Self.mib + 256 * 1024 + 4096, "peak \(peak)")
        #expect(peak >= 16 * Self.mib, "the spool was used: \(peak)")
        #expect(try peer.storedSHA256("big.bin") == digest)
        // Appends of at most 32 MiB: at least 7 PATCHes carried the stream after the creation.
        let patches = peer.requests.filter { $0.method == "PATCH" }
        #expect(patches.count >= 6, "\(peer.requests.map(\.method))")
    }

    @Test func kill9BeforeTheProducerEndedTakesAReplayAndRefusesAnotherStream() async throws {
        let w = try Workspace()
        let size = 24 * Self.mib
        let digest = try makeRandomFile(path: w.path("www/src.bin"), size: size, seed: 43)
        // Another stream: equal up to 1.5 MiB, which the server holds and the spool no longer does.
        var other = try contents(w.path("www/src.bin"))
        other[3 * Self.mib / 2] ^= 0xFF
        try other.write(to: URL(fileURLWithPath: w.path("www/other.bin")))
        let peer = try await UploadPeer()
        let src = w.path("www/src.bin")
        let args = ["upload", "-", peer.url(for: "r.bin"), "--interop-version", "6", "--spool-max", "4M"]
        // 10 MiB, then the producer hangs: resumectl is killed before the stream's end.
        let p = try startPipeline(w, producer: "{ head -c 10485760 '\(src)'; sleep 60; }", args, printingPID: true)
        let pid = try await pid(p)
        try await eventually(timeout: .seconds(20)) { peer.bytesReceived("r.bin") >= 10 * Self.mib }
        let id = try #require(try w.tokens().first)
        try await eventually(timeout: .seconds(10)) { (try stream(w, id)["start"] as? Int ?? 0) >= 4 * Self.mib }
        kill(pid, SIGKILL)
        p.send(signal: SIGKILL)
        _ = try await p.wait()
        let before = try stream(w, id)
        #expect(before["ended"] as? Bool == false)
        let spool = try #require(before["spool"] as? String)
        var info = stat()
        #expect(stat(spool, &info) == 0 && info.st_mode & 0o777 == 0o600)

        let list = try await w.run(["list"])
        #expect(list.stdout.contains("cut before its end"), "\(list)")
        let listed = try await w.run(["list", "--json"])
        #expect(listed.stdout.contains("\"streamEnded\":false"), "\(listed)")
        // Without the stream, nothing can go on.
        let empty = try await w.run(["resume", id])
        #expect(empty.status == 66, "\(empty)")

        let received = peer.bytesReceived("r.bin")
        let (bad, badStatus) = try await pipeline(w, producer: "cat '\(w.path("www/other.bin"))'", ["resume", id])
        #expect(badStatus == 65, "\(bad)")
        #expect(bad.stderr.contains("differs"), "\(bad)")
        #expect(peer.bytesReceived("r.bin") == received, "nothing was appended")
        #expect(try w.tokens() == [id], "the token stays for the right stream")

        // The same stream again (through the same command): checked, then continued from the server's offset.
        let (good, goodStatus) = try await pipeline(w, producer: "cat '\(src)'", args)
        #expect(goodStatus == 0, "\(good)")
        #expect(try peer.storedSHA256("r.bin") == digest)
        #expect(w.size(peer.storedPath("r.bin")) == size)
        #expect(try w.tokens().isEmpty)
        #expect(spoolFiles(w).isEmpty)
    }

    @Test func negotiatingDownFromTheNewestVersionDoesNotStall() async throws {
        let w = try Workspace()
        let peer = try await UploadPeer()
        let sum = w.path("sum")
        // --protocol ietf (no OPTIONS probe, which would learn 6 first) and no --interop-version: the creation
        // asks for 9, NIOResumableUpload answers 400 naming 6 before it read the body; the creation again, on
        // a new connection, goes through.
        let (r, status) = try await pipeline(
            w, producer: "head -c 3M /dev/urandom | tee >(sha256sum > '\(sum)')",
            ["upload", "-", peer.url(for: "v.bin"), "--protocol", "ietf", "--stall-timeout", "3", "--json"])
        #expect(status == 0, "\(r)")
        #expect(!r.stdout.contains("\"retry\""), "\(r.stdout)")
        #expect(try peer.storedSHA256("v.bin") == (try await teeSum(sum)))
        let versions = peer.requests.filter { $0.method == "POST" }.compactMap {
            $0.header("Upload-Draft-Interop-Version")
        }
        #expect(versions == ["9", "6"], "\(versions)")

        // A file to `resumectl serve` the same way (it answers OPTIONS without naming a version).
        let folder = try w.dir.subdirectory("served")
        let (serve, base) = try await startServe(folder)
        defer { serve.send(signal: SIGTERM) }
        let digest = try makeRandomFile(path: w.path("www/f.bin"), size: 3_000_000, seed: 45)
        let file = try await w.run([
            "upload", w.path("www/f.bin"), base + "/f.bin", "--protocol", "ietf", "--stall-timeout", "3", "--json",
        ])
        #expect(file.status == 0, "\(file)")
        #expect(!file.stdout.contains("\"retry\""), "\(file.stdout)")
        #expect(try sha256(file: folder + "/f.bin") == digest)
    }

    @Test func aFullDiskUnderTheSpoolIs74AndTheTokenStays() async throws {
        let w = try Workspace()
        let digest = try makeRandomFile(path: w.path("www/src.bin"), size: 12 * Self.mib, seed: 46)
        let peer = try await UploadPeer()
        let args = ["upload", "-", peer.url(for: "full.bin"), "--interop-version", "6", "--spool-max", "4M"]
        // A file-size limit of 6 MiB (resumectl ignores SIGXFSZ, so a write past it fails with EFBIG): the spool,
        // addressed by stream offsets, cannot take byte 6 MiB of the stream.
        let r = try await startPipeline(w, producer: "cat '\(w.path("www/src.bin"))'", args, setUp: "ulimit -f 6144")
            .wait(timeout: .seconds(120))
        #expect(status(r) == 74, "\(r)")
        #expect(r.stderr.contains("spool"), "\(r)")
        let id = try #require(try w.tokens().first, "the token stays: \(r)")
        #expect(spoolFiles(w).count == 1)
        #expect(r.stderr.contains("resumectl resume \(id)"), "\(r)")
        // With room again, the same stream piped into resume finishes it.
        let (done, code) = try await pipeline(w, producer: "cat '\(w.path("www/src.bin"))'", ["resume", id])
        #expect(code == 0, "\(done)")
        #expect(try peer.storedSHA256("full.bin") == digest)
        #expect(try w.tokens().isEmpty && spoolFiles(w).isEmpty)
    }

    @Test func pauseStopsAStreamAndTheSameStreamFinishesIt() async throws {
        let w = try Workspace()
        let digest = try makeRandomFile(path: w.path("www/src.bin"), size: 6 * Self.mib, seed: 47)
        let peer = try await UploadPeer()
        let src = w.path("www/src.bin")
        let args = ["upload", "-", peer.url(for: "p.bin"), "--interop-version", "6"]
        // The status is printed as soon as resumectl ends, though its producer still sleeps.
        let p = try startPipeline(w, producer: "{ head -c 3145728 '\(src)'; sleep 60; }", args)
        try await eventually(timeout: .seconds(20)) { peer.bytesReceived("p.bin") >= 3 * Self.mib }
        let id = try #require(try w.tokens().first)
        let paused = try await w.run(["pause", id])
        #expect(paused.status == 0, "\(paused)")
        try await eventually(timeout: .seconds(10)) { p.stderrSoFar.contains("status=") }
        #expect(p.stderrSoFar.contains("status=75"), "\(p.stderrSoFar)")
        #expect(p.stderrSoFar.contains("paused; resume needs the same stream on stdin again"), "\(p.stderrSoFar)")
        p.send(signal: SIGKILL)
        _ = try await p.wait()
        #expect(try stream(w, id)["ended"] as? Bool == false)
        let (done, code) = try await pipeline(w, producer: "cat '\(src)'", ["resume", id])
        #expect(code == 0, "\(done)")
        #expect(try peer.storedSHA256("p.bin") == digest)
        #expect(try w.tokens().isEmpty && spoolFiles(w).isEmpty)
    }
}
