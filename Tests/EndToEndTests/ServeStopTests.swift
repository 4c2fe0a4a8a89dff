import Foundation
import Testing

/// `serve`'s graceful stop: SIGTERM refuses new connections, lets requests in progress go on for
/// `--drain-seconds`, makes every upload's received bytes durable and exits 0; a second signal stops
/// it at once.
@Suite("serve graceful stop")
struct ServeStopTests {
    @Test(
        """
        SIGTERM during an upload by resumectl: exit 0 with every received byte durable; after the restart the client \
        continues from there
        """
    )
    func drainDuringUpload() async throws {
        let w = try Workspace()
        let size = 48 << 20
        let digest = try makeRandomFile(path: w.path("www/big.bin"), size: size, seed: 4701)
        let folder = try w.dir.subdirectory("served")
        var (serve, port) = try await ServeProcess.start(folder: folder, ["--drain-seconds", "1"])
        defer { serve.send(signal: SIGKILL) }
        let proxy = try FaultProxy(upstreamPort: port)
        let client = try w.start([
            "upload", w.path("www/big.bin"), proxy.url(for: "in/big.bin"), "--protocol", "ietf", "--limit-rate", "4M",
            "--retries", "100", "--retry-delay", "0.2",
        ])
        defer { client.send(signal: SIGKILL) }

        try await eventually(timeout: .seconds(60)) { proxy.bytesUpstream >= size / 4 }
        serve.send(signal: SIGTERM)
        let stopped = try await serve.wait(timeout: .seconds(40))
        #expect(stopped.status == 0 && !stopped.signaled, "\(stopped)")
        #expect(stopped.stderr.contains("resumectl: stopped"), "\(stopped.stderr)")
        let drained = try ServeProcess.recordedOffset(folder: folder)
        #expect(w.size(folder + "/.resumectl-uploads/" + (try uploadData(folder))) == drained)
        let before = proxy.connectionCount

        (serve, _) = try await ServeProcess.start(folder: folder, port: port)
        let result = try await client.wait(timeout: .seconds(120))
        #expect(result.status == 0, "\(result) serve: \(serve.stderrSoFar)")
        #expect(try sha256(file: folder + "/in/big.bin") == digest)
        // Everything serve read is durable: what the proxy passed on before the stop (request heads
        // included) minus what could sit unread in a socket buffer. A kill -9 instead loses up to a
        // second of data (4 MiB). After the restart the client sent the rest from the drained offset,
        // and no more than a few request heads on top.
        let connections = proxy.connections
        let reached = connections.prefix(before).reduce(0) { $0 + $1.bytesUpstream }
        let resent = connections.dropFirst(before).reduce(0) { $0 + $1.bytesUpstream }
        let story = "\(connections.map { ($0.bytesUpstream, $0.requestLines) })"
        #expect(drained > size / 4 && reached - drained < 1 << 20, "drained \(drained) of \(reached) sent: \(story)")
        #expect(
            resent >= size - drained && resent < size - drained + (64 << 10),
            "sent \(resent) after the restart, \(size - drained) were left: \(story)")
    }

    @Test("SIGTERM with only an idle keep-alive connection open stops at once, exit 0, though the drain time is long")
    func idleConnectionDoesNotHoldTheStop() async throws {
        let w = try Workspace()
        let folder = try w.dir.subdirectory("served")
        try Data("hi".utf8).write(to: URL(fileURLWithPath: folder + "/hi.txt"))
        let (serve, port) = try await ServeProcess.start(folder: folder, ["--drain-seconds", "60"])
        defer { serve.send(signal: SIGKILL) }
        // A keep-alive connection that has had its answer and stays open, idle, through the stop.
        let fd = try SocketFD.connect(port: port)
        defer { close(fd) }
        _ = Array("GET /hi.txt HTTP/1.1\r\nHost: x\r\n\r\n".utf8).withUnsafeBytes {
            send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
        }
        let (answer, closed) = try await RawHTTP.offPool { RawHTTP.read(fd, until: .now + .milliseconds(500)) }
        #expect(answer.hasPrefix("HTTP/1.1 200") && !closed, "\(answer)")
        let started = ContinuousClock.now
        serve.send(signal: SIGTERM)
        let stopped = try await serve.wait(timeout: .seconds(20))
        #expect(stopped.status == 0 && !stopped.signaled, "\(stopped)")
        #expect(ContinuousClock.now - started < .seconds(15), "the idle connection was closed, not waited for")
        let (_, closedByServe) = try await RawHTTP.offPool { RawHTTP.read(fd, until: .now + .seconds(2)) }
        #expect(closedByServe)
    }

    @Test("a second SIGTERM during the drain stops serve at once (128 + 15); the upload continues after the restart")
    func secondSignal() async throws {
        let w = try Workspace()
        let size = 24 << 20
        let digest = try makeRandomFile(path: w.path("www/up.bin"), size: size, seed: 4702)
        let folder = try w.dir.subdirectory("served")
        var (serve, port) = try await ServeProcess.start(folder: folder, ["--drain-seconds", "120"])
        defer { serve.send(signal: SIGKILL) }
        let client = try w.start([
            "upload", w.path("www/up.bin"), "http://127.0.0.1:\(port)/in/up.bin", "--protocol", "ietf", "--limit-rate",
            "2M",
            "--retries", "100", "--retry-delay", "0.2",
        ])
        defer { client.send(signal: SIGKILL) }
        try await eventually(timeout: .seconds(60)) { (try? ServeProcess.recordedOffset(folder: folder)) ?? 0 > 0 }
        serve.send(signal: SIGTERM)
        try await Task.sleep(for: .seconds(1))
        #expect(serve.isRunning, "the upload in progress holds the drain")
        let started = ContinuousClock.now
        serve.send(signal: SIGTERM)
        let stopped = try await serve.wait(timeout: .seconds(10))
        #expect(stopped.status == 128 + SIGTERM && !stopped.signaled, "\(stopped)")
        #expect(stopped.stderr.contains("stopping at once"), "\(stopped.stderr)")
        #expect(ContinuousClock.now - started < .seconds(5))
        (serve, _) = try await ServeProcess.start(folder: folder, port: port)
        let result = try await client.wait(timeout: .seconds(120))
        #expect(result.status == 0, "\(result) serve: \(serve.stderrSoFar)")
        #expect(try sha256(file: folder + "/in/up.bin") == digest)
    }

    /// The name of the one upload's data file in the store.
    private func uploadData(_ folder: String) throws -> String {
        let names = try FileManager.default.contentsOfDirectory(atPath: folder + "/.resumectl-uploads").filter {
            $0.hasSuffix(".data")
        }
        return try #require(names.first, "an upload's data file")
    }
}
