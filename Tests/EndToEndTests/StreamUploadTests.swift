import Foundation
import Testing

/// `producer | resumectl upload - URL`, with real pipes through bash, against Apple's NIOResumableUpload
/// (through the cutting proxy) and `resumectl serve`: the spool, its bound, kills before and after the
/// stream's end, the replay rule.
@Suite(.serialized) struct StreamUploadTests: StreamPipelines {
    static let MiB = 1 << 20

    @Test func aStreamThroughSeveralCutsArrivesWhole() async throws {
        let w = try Workspace()
        let peer = try await UploadPeer()
        let proxy = try FaultProxy(
            upstreamPort: peer.port,
            plan: [
                .cutAfterUpstream(bytes: 9 * Self.MiB), .cutAfterUpstream(bytes: 5 * Self.MiB, reset: true),
                .cutAfterUpstream(bytes: 7 * Self.MiB),
            ])
        peer.advertise(origin: proxy.baseURL)
        let (r, code) = try await pipeline(
            w, producer: "head -c 40000000 /dev/urandom | tee >(sha256sum > \(w.path("sum")))",
            ["upload", "-", proxy.url(for: "s.bin"), "--retry-delay", "0.05", "--json"])
        #expect(code == 0, "\(r)")
        let sum = try String(contentsOfFile: w.path("sum"), encoding: .utf8)
        #expect(sum.hasPrefix(try peer.storedSHA256("s.bin")), "\(sum)")
        #expect(names(events(r.stdout)).filter { $0 == "retry" }.count >= 1, "\(r.stdout)")
        #expect(proxy.connectionCount >= 2, "the cuts happened")
        #expect(peer.requests.contains { $0.method == "HEAD" }, "a cut is resumed by asking the offset")
        #expect(events(r.stdout).first("completed")?["sha256"] as? String == String(sum.prefix(64)))
        // The server got each byte about once: what the cuts lost, not the stream again.
        let received = peer.requests.reduce(0) { $0 + $1.bodyBytes }
        #expect(received < 40_000_000 + 3 * 9 * Self.MiB, "received \(received)")
        #expect(try w.tokens().isEmpty && spoolFiles(w).isEmpty, "token and spool are gone")
    }

    @Test func aStreamToResumectlServe() async throws {
        let w = try Workspace()
        let (serve, port) = try await ServeProcess.start(folder: w.path("www"), currentDirectory: w.out)
        let base = "http://127.0.0.1:\(port)"
        let (r, code) = try await pipeline(
            w, producer: "head -c 20000000 /dev/urandom | tee >(sha256sum > \(w.path("sum")))",
            ["upload", "-", base + "/up/s.bin"])
        serve.send(signal: SIGTERM)
        #expect(code == 0, "\(r)")
        #expect(r.stdout == base + "/up/s.bin\n")
        let sum = try String(contentsOfFile: w.path("sum"), encoding: .utf8)
        #expect(sum.hasPrefix(try sha256(file: w.path("www/up/s.bin"))))
    }

    @Test func aStallingProducerDoesNotAbortTheUpload() async throws {
        let w = try Workspace()
        let peer = try await UploadPeer()
        let producer =
            "(head -c 1000000 /dev/urandom; sleep 4; head -c 1000000 /dev/urandom) | tee >(sha256sum > "
            + "\(w.path("sum")))"
        let began = Date()
        let (r, code) = try await pipeline(
            w, producer: producer, ["upload", "-", peer.url(for: "slow.bin"), "--stall-timeout", "2", "--json"])
        // The producer paused twice as long as the stall timeout: the upload waited for it and went on.
        #expect(code == 0, "\(r)")
        #expect(Date().timeIntervalSince(began) >= 4)
        #expect(events(r.stdout).first("completed")?["bytes"] as? Int == 2_000_000, "\(r.stdout)")
        let sum = try String(contentsOfFile: w.path("sum"), encoding: .utf8)
        #expect(sum.hasPrefix(try peer.storedSHA256("slow.bin")))
    }

    @Test func theSpoolStaysWithinSpoolMax() async throws {
        let w = try Workspace()
        let peer = try await UploadPeer()
        let spoolMax = 4 * Self.MiB
        let p = try startPipeline(
            w, producer: "head -c 40000000 /dev/urandom | tee >(sha256sum > \(w.path("sum")))",
            ["upload", "-", peer.url(for: "b.bin"), "--spool-max", "4M", "--limit-rate", "16M"])
        let (peak, samples) = try await spoolPeak(w, while: p, every: .milliseconds(20))
        let r = try await p.wait()
        #expect(status(r) == 0, "\(r)")
        let sum = try String(contentsOfFile: w.path("sum"), encoding: .utf8)
        #expect(sum.hasPrefix(try peer.storedSHA256("b.bin")))
        #expect(samples > 20, "the spool was watched while it ran")
        // --spool-max plus one read buffer (256 KiB) and a page at each punched edge.
        #expect(peak <= spoolMax + 256 * 1024 + 8192, "peak spool \(peak)")
        #expect(peak > 0)
    }

    @Test func killedAfterTheEndItFinishesFromTheSpool() async throws {
        let w = try Workspace()
        let peer = try await UploadPeer()
        let digest = try makeRandomFile(path: w.path("www/src.bin"), size: 12_000_000, seed: 41)
        let id = try await killed(
            w, producer: "cat \(w.path("www/src.bin"))", url: peer.url(for: "e.bin"), acknowledged: false
        ) {
            $0["ended"] as? Bool == true
        }
        #expect(spoolFiles(w) == [id])
        let show = try await w.run(["show", id])
        #expect(show.stdout.contains("\"ended\" : true"), "\(show)")
        let r = try await resume(w, id)
        #expect(r.status == 0, "\(r)")
        #expect(try peer.storedSHA256("e.bin") == digest)
        #expect(try w.tokens().isEmpty && spoolFiles(w).isEmpty)
    }

    @Test func killedBeforeTheEndTheSameStreamFinishesAndAnotherIs65() async throws {
        let w = try Workspace()
        let peer = try await UploadPeer()
        let digest = try makeRandomFile(path: w.path("www/src.bin"), size: 30_000_000, seed: 42)
        _ = try makeRandomFile(path: w.path("www/other.bin"), size: 30_000_000, seed: 43)
        let id = try await killed(
            w, producer: "cat \(w.path("www/src.bin"))", url: peer.url(for: "r.bin"), extra: ["--spool-max", "4M"]
        ) {
            $0["ended"] as? Bool == false && ($0["start"] as? Int ?? 0) > 0
        }
        let list = try await w.run(["list"])
        #expect(list.stdout.contains(id), "\(list)")
        // Nothing on stdin: the tail of the stream is gone with the pipe.
        let none = try await w.run(["resume", id])
        #expect(none.status == 66, "\(none)")
        let other = try await resume(w, id, stdin: contents(w.path("www/other.bin")))
        #expect(other.status == 65, "\(other)")
        #expect(other.stderr.contains("differs"), "\(other)")
        #expect(try w.tokens() == [id], "the token stays for the right stream")
        let r = try await resume(w, id, stdin: contents(w.path("www/src.bin")), timeout: .seconds(120))
        #expect(r.status == 0, "\(r)")
        #expect(try peer.storedSHA256("r.bin") == digest)
        #expect(try w.tokens().isEmpty && spoolFiles(w).isEmpty)
    }

    /// The spool is not fsynced while the stream flows; a power loss may take its unsynced bytes, which the
    /// server may already hold. Cut back to what its token calls synced (as such a loss may leave it), the
    /// spool is refilled from the replay, each refilled byte checked against the token's checksums.
    @Test func aSpoolCutBackToItsSyncedBytesIsRefilledFromTheReplay() async throws {
        let w = try Workspace()
        let peer = try await UploadPeer()
        let digest = try makeRandomFile(path: w.path("www/src.bin"), size: 30_000_000, seed: 45)
        let id = try await killed(
            w, producer: "cat \(w.path("www/src.bin"))", url: peer.url(for: "p.bin"), extra: ["--spool-max", "4M"]
        ) {
            $0["ended"] as? Bool == false && ($0["start"] as? Int ?? 0) > 0
        }
        let upload = try #require(try w.token(id)["upload"] as? [String: Any])
        let stream = try #require(upload["stream"] as? [String: Any])
        let (synced, durable) = (try #require(stream["synced"] as? Int), try #require(stream["durable"] as? Int))
        let acknowledged = try #require(upload["acknowledgedBytes"] as? Int)
        #expect(synced < durable && synced < acknowledged, "nothing was fsynced while the stream flowed: \(stream)")
        // Inside a block (most kills) the open block's checksum is recorded; at a boundary there is none.
        #expect((stream["tail"] is String) == (durable % Self.MiB != 0), "\(stream)")
        #expect(truncate(w.state + "/spool/" + id, off_t(synced)) == 0)
        // The last byte the token recorded: only its block's checksum (or `tail`, inside a block) can tell.
        var other = try contents(w.path("www/src.bin"))
        other[durable - 1] ^= 1

        let changed = try await resume(w, id, stdin: other)
        #expect(changed.status == 65, "a byte past the spool's synced end differs: \(changed)")
        #expect(try w.tokens() == [id], "the token stays for the right stream")
        let r = try await resume(w, id, ["--json"], stdin: contents(w.path("www/src.bin")), timeout: .seconds(120))
        #expect(r.status == 0, "\(r)")
        #expect(
            (events(r.stdout).first("started")?["offset"] as? Int ?? 0) >= acknowledged,
            "it went on from the server's offset: \(r.stdout)")
        #expect(try peer.storedSHA256("p.bin") == digest)
        #expect(try w.tokens().isEmpty && spoolFiles(w).isEmpty)
    }

    @Test func cancelRemovesTheSpool() async throws {
        let w = try Workspace()
        let peer = try await UploadPeer()
        _ = try makeRandomFile(path: w.path("www/src.bin"), size: 12_000_000, seed: 44)
        let id = try await killed(
            w, producer: "cat \(w.path("www/src.bin"))", url: peer.url(for: "c.bin"), acknowledged: false
        ) { _ in true }
        #expect(spoolFiles(w) == [id])
        let r = try await w.run(["cancel", id])
        #expect(r.status == 0, "\(r)")
        #expect(try w.tokens().isEmpty && spoolFiles(w).isEmpty)
    }

    @Test(
        """
        --protocol plain: the stream goes as one chunked POST, the user is told once that it cannot be resumed, no \
        token or spool
        """
    )
    func aStreamToAPlainServerGoesInOneRequest() async throws {
        let w = try Workspace()
        let (serve, port) = try await ServeProcess.start(folder: w.path("www"), currentDirectory: w.out)
        let proxy = try FaultProxy(upstreamPort: port, plan: [])
        let (r, code) = try await pipeline(
            w, producer: "head -c 30000000 /dev/urandom | tee >(sha256sum > \(w.path("sum")))",
            ["upload", "-", proxy.url(for: "plain.bin"), "--protocol", "plain"])
        serve.send(signal: SIGTERM)
        #expect(code == 0, "\(r)")
        let sum = try String(contentsOfFile: w.path("sum"), encoding: .utf8)
        #expect(sum.hasPrefix(try sha256(file: w.path("www/plain.bin"))))
        let lines = proxy.connections.flatMap(\.requestLines)
        #expect(lines.count == 1 && lines.first?.hasPrefix("POST /plain.bin ") == true, "\(lines)")
        #expect(r.stderr.components(separatedBy: "takes no resumable uploads").count == 2, "told once: \(r.stderr)")
        #expect(try w.tokens().isEmpty && spoolFiles(w).isEmpty)
    }

    /// A server that knows neither tus nor the draft (OPTIONS answers nothing of either) and takes a chunked POST.
    static let plainServer = #"""
        import hashlib, sys
        from http.server import BaseHTTPRequestHandler, HTTPServer
        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def do_OPTIONS(self):
                self.send_response(200); self.send_header("Allow", "GET, POST")
                self.send_header("Content-Length", "0"); self.end_headers()
            def do_POST(self):
                h, n = hashlib.sha256(), 0
                while True:
                    size = int(self.rfile.readline().split(b";")[0], 16)
                    if size == 0:
                        self.rfile.readline(); break
                    data = self.rfile.read(size); self.rfile.readline(); h.update(data); n += len(data)
                with open(sys.argv[1], "a") as f: f.write(f"{self.command} {self.path} {n} {h.hexdigest()}\n")
                self.send_response(201); self.send_header("Content-Length", "0"); self.end_headers()
            def log_message(self, *a): pass
        s = HTTPServer(("127.0.0.1", 0), H)
        print(s.server_port, flush=True)
        s.serve_forever()
        """#

    @Test(
        """
        --protocol auto, a server naming neither tus nor the draft: one POST of the whole stream, not a truncated \
        first append
        """
    )
    func aStreamToAnUnknownServerIsNotTruncated() async throws {
        let w = try Workspace()
        try Self.plainServer.write(toFile: w.path("plain.py"), atomically: true, encoding: .utf8)
        let server = try RunningProcess("python3", [w.path("plain.py"), w.path("received")])
        defer { server.send(signal: SIGTERM) }
        let port = try await server.waitForLine { !$0.isEmpty }
        let (r, code) = try await pipeline(
            w, producer: "head -c 20000000 /dev/urandom | tee >(sha256sum > \(w.path("sum")))",
            ["upload", "-", "http://127.0.0.1:\(port)/in/x.bin", "--json"])
        #expect(code == 0, "\(r)")
        let sum = try String(contentsOfFile: w.path("sum"), encoding: .utf8)
        let received = try String(contentsOfFile: w.path("received"), encoding: .utf8)
        #expect(received == "POST /in/x.bin 20000000 \(sum.prefix(64))\n", "\(received)")
        #expect(events(r.stdout).first("completed")?["bytes"] as? Int == 20_000_000, "\(r.stdout)")
        #expect(try w.tokens().isEmpty && spoolFiles(w).isEmpty)
    }

    @Test func aStreamIsRefusedWhereItCannotWork() async throws {
        let w = try Workspace()
        for args in [
            ["upload", "-", "http://127.0.0.1:1/x", "--detach"],
            ["upload", "x.bin", "http://127.0.0.1:1/x", "--spool-max", "8M"],
        ] {
            let r = try await w.run(args)
            #expect(r.status == 64, "\(args): \(r)")
        }
    }
}
