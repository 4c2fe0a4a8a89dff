import Foundation
import Testing

/// `make soak`: one file (RESUMECTL_SOAK_TUS_SIZE, default 256 MiB) to tuspyserver and to `serve` through a proxy that
/// forwards each connection at 8 MB/s: `--connections 4` (tus concatenation) against one connection, both
/// timed here, then four connections through three SIGKILLs and resumes, every partial creation counted at
/// the proxy. `make bench`'s case `tus-parallel` compares the same with tuspy.
extension SoakTests {
    static let tusSize = Int(env["RESUMECTL_SOAK_TUS_SIZE"] ?? "") ?? 256 << 20
    static let perConnection = 8_000_000

    /// A fresh tus peer: tuspyserver, or `resumectl serve` on a folder of its own; its port, the path uploads go
    /// to, the SHA-256 of the one upload it holds, and how to stop it.
    func tusPeer(_ w: Workspace, _ name: String) async throws -> (
        port: Int, path: String, digest: () -> String?, stop: () -> Void
    ) {
        guard name == "serve" else {
            let server = try await TusServer()
            // tuspyserver deletes the partials it joined: the one upload left is the final one.
            let digest = { () -> String? in
                let stored = server.storedUploads()
                return stored.count == 1 ? try? sha256(file: server.files.path(stored[0])) : nil
            }
            return (server.port, "files/", digest, {})
        }
        let folder = try w.dir.subdirectory("served-\(UUID().uuidString.prefix(8))")
        let (process, port) = try await ServeProcess.start(folder: folder, port: 0)
        return (port, "in/tus.bin", { try? sha256(file: folder + "/in/tus.bin") }, { process.send(signal: SIGKILL) })
    }

    /// `upload` to a fresh peer behind a per-connection limit: seconds taken, the proxy, the stored digest.
    func timedTusUpload(_ w: Workspace, _ name: String, connections: Int) async throws -> (
        seconds: Double, proxy: FaultProxy, digest: String?, result: ProcessResult
    ) {
        let peer = try await tusPeer(w, name)
        defer { peer.stop() }
        let proxy = try TusConcatUploadTests.limited(peer.port, bytesPerSecond: Self.perConnection)
        let clock = ContinuousClock()
        let start = clock.now
        let r = try await w.run(
            ["upload", w.path("www/tus.bin"), proxy.url(for: peer.path), "--connections", "\(connections)", "--json"],
            timeout: .seconds(1800))
        let elapsed = clock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return (seconds, proxy, peer.digest(), r)
    }

    @Test(arguments: ["tuspyserver", "serve"]) func tusConcatFourConnections(to name: String) async throws {
        let w = try Workspace()
        let digest = try makeRandomFile(path: w.path("www/tus.bin"), size: Self.tusSize, seed: 156)

        let one = try await timedTusUpload(w, name, connections: 1)
        #expect(one.result.status == 0, "\(one.result)")
        #expect(one.digest == digest)
        let four = try await timedTusUpload(w, name, connections: 4)
        #expect(four.result.status == 0, "\(four.result)")
        #expect(four.digest == digest)
        #expect(TusConcatUploadTests.count("POST", four.proxy) == 5)
        let speedup = one.seconds / four.seconds
        print(
            String(
                format: "soak | tus concatenation to %@ | %d MiB | 1 connection %.1f s | 4 connections %.1f s | %.2fx",
                name, Self.tusSize >> 20, one.seconds, four.seconds, speedup))
        #expect(speedup >= 3.2, "one connection \(one.seconds) s, four \(four.seconds) s")

        // Three kills, each after a random while; then the resume that finishes.
        let peer = try await tusPeer(w, name)
        defer { peer.stop() }
        let proxy = try TusConcatUploadTests.limited(peer.port, bytesPerSecond: Self.perConnection)
        var rng = SeededGenerator(seed: 156)
        let expected = Double(Self.tusSize) / Double(4 * Self.perConnection)
        var kills = 0
        var id: String?
        while kills < 3 {
            let args =
                id.map { ["resume", $0, "--json"] }
                ?? ["upload", w.path("www/tus.bin"), proxy.url(for: peer.path), "--connections", "4", "--json"]
            let p = try w.start(args)
            let wait = Double.random(in: 0.15...0.3, using: &rng) * expected
            try await Task.sleep(for: .milliseconds(Int(wait * 1000)))
            try #require(p.isRunning, "the upload ended before kill \(kills + 1)")
            p.send(signal: SIGKILL)
            _ = try await p.wait()
            kills += 1
            // tuspyserver 4.4.3 waits for an upload's lock with time.sleep inside its event loop (lock.py, called by
            // request.py's request_chunks_dep): a PATCH that arrives while the killed run's PATCH of the same partial
            // is still being read (this proxy forwards what the dead client left in socket buffers at 8 MB/s) blocks
            // the whole server until the lock times out (30 s, then 503) — every connection stalls meanwhile. Not
            // resumectl's doing: the next run starts once the server has ended the killed run's requests.
            try await eventually(timeout: .seconds(60)) { proxy.connections.allSatisfy(\.closed) }
            id = try w.tokens().first
        }
        let token = try #require(id)
        let held = ((try w.token(token)["upload"] as? [String: Any])?["acknowledgedBytes"] as? Int) ?? 0
        let clock = ContinuousClock()
        let resumed = clock.now
        let r = try await w.run(["resume", token, "--json"], timeout: .seconds(1800))
        let took = clock.now - resumed
        #expect(r.status == 0, "\(r)")
        let ok = peer.digest() == digest
        let posts = TusConcatUploadTests.count("POST", proxy)
        Self.row(
            "tus concatenation to \(name), 3 kills", faults: kills, finished: r.status == 0,
            resent: max(0, proxy.bytesUpstream - Self.tusSize - proxy.connectionCount * 400),
            mismatch: r.status == 0 && !ok)
        let retries = events(r.stdout).filter { $0["event"] as? String == "retry" }
        let errors = retries.map { $0["error"] as? String ?? "" }
        print(
            "soak | tus concatenation, 3 kills | POSTs \(posts) | token held \(held) B at the last kill | resume took "
                + "\(took.components.seconds) s, \(retries.count) retries: \(errors)")
        #expect(ok)
        // Four partial creations and one final, however many runs: no partial was created twice.
        #expect(posts == 5, "\(TusConcatUploadTests.requests(proxy).filter { $0.hasPrefix("POST") })")
    }
}
