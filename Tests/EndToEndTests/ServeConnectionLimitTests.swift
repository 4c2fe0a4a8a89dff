import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `serve`'s connection limits: past `--max-connections` (by default half of what the descriptor limit
/// leaves) a connection is answered 503 and closed — never a crash, never a loop on `accept`; a client
/// that takes no byte of a download for `--send-timeout` is dropped.
@Suite("serve connection limits")
struct ServeConnectionLimitTests {
    @Test(
        """
        ulimit -n 64, 150 connections: the ones past the cap are refused at once, serve answers afterwards and did \
        not spin
        """,
        arguments: [nil, 1000] as [Int?])
    func descriptorLimit(maxConnections: Int?) async throws {
        let w = try Workspace()
        let folder = try w.dir.subdirectory("served")
        try Data("still here".utf8).write(to: URL(fileURLWithPath: folder + "/ok.txt"))
        let extra = maxConnections.map { ["--max-connections", "\($0)"] } ?? []
        let (serve, port) = try await ServeProcess.start(folder: folder, extra, descriptors: 64)
        defer { serve.send(signal: SIGKILL) }
        let cpuBefore = try ServeProcess.cpuSeconds(pid: serve.pid)

        let outcome = try await RawHTTP.offPool { try Self.flood(port: port, count: 150) }
        // (64 - 32) / 2 = 16 by default; a cap beyond what 64 descriptors can hold is lowered to 32.
        let cap = maxConnections == nil ? 16 : 32
        #expect(outcome.held <= cap && outcome.held >= cap / 2, "\(outcome)")
        #expect(outcome.refused503 + outcome.closed == 150 - outcome.held, "\(outcome)")
        #expect(outcome.refused503 > 0, "the refused hear 503: \(outcome)")
        if maxConnections != nil {
            #expect(serve.stderrSoFar.contains("--max-connections lowered to 32"), "\(serve.stderrSoFar)")
        }
        #expect(serve.isRunning, "\(serve.stderrSoFar)")

        let again = try await CurlExchange.run(["http://127.0.0.1:\(port)/ok.txt"])
        #expect(again.status == 200 && String(decoding: again.body, as: UTF8.self) == "still here", "\(again.stderr)")
        let cpu = try ServeProcess.cpuSeconds(pid: serve.pid) - cpuBefore
        #expect(cpu < 3, "serve used \(cpu) s of CPU for 150 connections: it must not spin")
    }

    struct Flood: CustomStringConvertible {
        var held = 0
        var refused503 = 0
        var closed = 0
        var description: String { "held \(held), 503 \(refused503), closed \(closed)" }
    }

    /// Opens `count` connections at once, sends nothing, and sorts them once nothing has changed for 1.5 s
    /// (at least 3 s, at most 20: a loaded machine may leave some in the backlog for a while): still open
    /// and silent (held by serve), answered 503, or closed without an answer. Then closes them all.
    static func flood(port: Int, count: Int) throws -> Flood {
        var fds: [Int32] = []
        defer { for fd in fds { close(fd) } }
        for _ in 0..<count { fds.append(try SocketFD.connect(port: port)) }
        for fd in fds { SocketFD.setNonBlocking(fd) }
        var answers = [String](repeating: "", count: count)
        var ended = [Bool](repeating: false, count: count)
        let start = ContinuousClock.now
        var lastChange = start
        var chunk = [UInt8](repeating: 0, count: 512)
        while ContinuousClock.now < start + .seconds(20),
            ContinuousClock.now < start + .seconds(3) || ContinuousClock.now < lastChange + .milliseconds(1500)
        {
            for (index, fd) in fds.enumerated() where !ended[index] {
                let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if n > 0 {
                    answers[index] += String(decoding: chunk[0..<n], as: UTF8.self)
                    lastChange = ContinuousClock.now
                } else if n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK) {
                    ended[index] = true
                    lastChange = ContinuousClock.now
                }
            }
            usleep(50_000)
        }
        var flood = Flood()
        for index in 0..<count {
            if answers[index].hasPrefix("HTTP/1.1 503") {
                flood.refused503 += 1
            } else if ended[index] {
                flood.closed += 1
            } else {
                flood.held += 1
            }
        }
        return flood
    }

    @Test("a client that reads a download a byte a second is dropped after --send-timeout; serve goes on")
    func slowReader() async throws {
        let w = try Workspace()
        let folder = try w.dir.subdirectory("served")
        let size = 64 << 20
        _ = try makeRandomFile(path: folder + "/big.bin", size: size, seed: 4703)
        let (serve, port) = try await ServeProcess.start(folder: folder, ["--send-timeout", "2"])
        defer { serve.send(signal: SIGKILL) }
        let script = """
            import socket, sys, time
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.connect(("127.0.0.1", int(sys.argv[1])))
            s.sendall(b"GET /big.bin HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")
            got, ended = 0, "open"
            try:
                for _ in range(10):
                    b = s.recv(1)
                    if not b:
                        ended = "eof"; break
                    got += 1
                    time.sleep(1)
                s.settimeout(20)
                while ended == "open":
                    b = s.recv(1 << 20)
                    if not b:
                        ended = "eof"; break
                    got += len(b)
            except ConnectionResetError:
                ended = "reset"
            except socket.timeout:
                ended = "timeout"
            print(got, ended)
            """
        let reader = try await runProcess("python3", ["-c", script, "\(port)"], timeout: .seconds(90))
        let words = reader.stdout.split(whereSeparator: \.isWhitespace)
        let got = try #require(words.first.flatMap { Int($0) }, "\(reader)")
        #expect(got < size / 2 && (words.last == "reset" || words.last == "eof"), "\(reader)")
        #expect(serve.stderrSoFar.contains("(--send-timeout)"), "\(serve.stderrSoFar)")
        let after = try await CurlExchange.run(["-r", "0-99", "http://127.0.0.1:\(port)/big.bin"])
        #expect(after.status == 206)
    }
}
