import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Proves each piece of `Support/` against the curl CLI, so an end-to-end failure can be blamed on
/// resumectl and not on its test peers.
@Suite("Test support self-tests")
struct SupportSelfTests {
    // MARK: files and processes

    @Test func randomFilesAreDeterministicAndHashed() throws {
        let dir = try TempDirectory()
        let a = try makeRandomFile(path: dir.path("a"), size: 3 * 1024 * 1024 + 5, seed: 7)
        let b = try makeRandomFile(path: dir.path("b"), size: 3 * 1024 * 1024 + 5, seed: 7)
        let c = try makeRandomFile(path: dir.path("c"), size: 3 * 1024 * 1024 + 5, seed: 8)
        #expect(a == b)
        #expect(a != c)
        #expect(try sha256(file: dir.path("a")) == a)
        #expect(try FileManager.default.attributesOfItem(atPath: dir.path("a"))[.size] as? Int == 3 * 1024 * 1024 + 5)
        let bytes = randomBytes(count: 1000, seed: 7)
        let prefix = try Data(contentsOf: URL(fileURLWithPath: dir.path("a"))).prefix(1000)
        #expect(Array(prefix) == bytes)
        #expect(sha256(bytes) == sha256(prefix))
    }

    @Test func tempDirectoryIsRemoved() throws {
        var path = ""
        do {
            let dir = try TempDirectory()
            path = dir.path
            try Data([1, 2, 3]).write(to: URL(fileURLWithPath: dir.path("x")))
            #expect(FileManager.default.fileExists(atPath: dir.path("x")))
        }
        #expect(!path.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func freePortIsBindable() throws {
        let port = try freePort()
        #expect(port > 0)
        #expect(!isAcceptingConnections(port: port))
    }

    @Test func runProcessCapturesStatusAndBothStreams() async throws {
        let result = try await runProcess(
            "/bin/sh", ["-c", "echo out; echo err >&2; echo $E2E_VAR; exit 3"],
            environment: ["E2E_VAR": "from-test"])
        #expect(result.status == 3)
        #expect(!result.signaled)
        #expect(result.stdoutLines == ["out", "from-test"])
        #expect(result.stderr == "err\n")
    }

    @Test func runProcessDrainsLargeOutputWithoutDeadlock() async throws {
        // 3 MB on each pipe: far beyond the 64 KiB a pipe holds.
        let script = "head -c 3000000 /dev/zero | tr '\\0' a; head -c 3000000 /dev/zero | tr '\\0' b >&2"
        let result = try await runProcess("/bin/sh", ["-c", script], timeout: .seconds(20))
        #expect(result.status == 0)
        #expect(result.stdout.utf8.count == 3_000_000)
        #expect(result.stderr.utf8.count == 3_000_000)
    }

    @Test func runProcessPassesStdinAndTimesOut() async throws {
        let echoed = try await runProcess("/bin/cat", [], stdin: Data("hello\nworld".utf8))
        #expect(echoed.stdout == "hello\nworld")
        await #expect(throws: SupportError.self) {
            try await runProcess("/bin/sleep", ["10"], timeout: .milliseconds(300))
        }
    }

    @Test func runningProcessStreamsLinesAndTakesSignals() async throws {
        let process = try RunningProcess("/bin/sh", ["-c", "echo one; echo two; exec sleep 30"])
        #expect(try await process.nextLine() == "one")
        #expect(try await process.waitForLine { $0.hasPrefix("t") } == "two")
        #expect(process.isRunning)
        process.send(signal: SIGINT)
        let result = try await process.wait(timeout: .seconds(5))
        #expect(result.signaled)
        #expect(result.status == SIGINT)
    }

    @Test func resumectlBinaryIsFoundAndRuns() async throws {
        #expect(resumectlBinary.hasSuffix("/resumectl"))
        try #require(resumectlIsBuilt, "no executable at \(resumectlBinary): run `swift build --build-tests` first")
        let help = try await runProcess(resumectlBinary, ["--help"])
        #expect(help.status == 0, "\(help)")
        #expect(help.stdout.contains("download"))
    }

    // MARK: nginx

    @Test func nginxServesFilesByteExactAndAnswersRanges() async throws {
        let dir = try TempDirectory()
        let www = try dir.subdirectory("www")
        let digest = try makeRandomFile(path: www + "/file.bin", size: 3_000_000, seed: 1)
        let nginx = try await NginxServer(root: www)

        let full = try await runProcess(curlBinary, ["-sS", "-o", dir.path("full"), nginx.url(for: "file.bin")])
        #expect(full.status == 0, "\(full)")
        #expect(try sha256(file: dir.path("full")) == digest)

        let ranged = try await runProcess(
            curlBinary, ["-sS", "-r", "100-199", "-D", "-", "-o", dir.path("part"), nginx.url(for: "file.bin")])
        #expect(ranged.stdoutLines.first?.hasPrefix("HTTP/1.1 206") == true, "\(ranged)")
        #expect(ranged.stdout.contains("Content-Range: bytes 100-199/3000000"))
        let part = try Data(contentsOf: URL(fileURLWithPath: dir.path("part")))
        #expect(Array(part) == Array(randomBytes(count: 200, seed: 1)[100..<200]))

        let log = nginx.accessLog()
        #expect(log.count == 2)
        #expect(log.last?.hasPrefix("206 GET /file.bin range=\"bytes=100-199\"") == true, "\(log)")
        nginx.stop()
        #expect(!nginx.isRunning)
        #expect(!isAcceptingConnections(port: nginx.port))
    }

    @Test func nginxLimitRateSlowsTheBody() async throws {
        let dir = try TempDirectory()
        let www = try dir.subdirectory("www")
        try makeRandomFile(path: www + "/slow.bin", size: 600_000, seed: 2)
        let nginx = try await NginxServer(root: www, limitRate: 400_000)
        let start = ContinuousClock.now
        let result = try await runProcess(curlBinary, ["-sS", "-o", "/dev/null", nginx.url(for: "slow.bin")])
        #expect(result.status == 0)
        #expect(ContinuousClock.now - start > .milliseconds(400))
    }

    // MARK: fault proxy

    @Test func faultProxyCutsAfterExactByteCountThenPasses() async throws {
        let dir = try TempDirectory()
        let www = try dir.subdirectory("www")
        let digest = try makeRandomFile(path: www + "/file.bin", size: 2_000_000, seed: 3)
        let nginx = try await NginxServer(root: www)
        let proxy = try FaultProxy(upstreamPort: nginx.port, plan: [.cutAfterDownstream(bytes: 100_000)])

        let cut = try await runProcess(
            curlBinary, ["-sS", "-D", dir.path("head1"), "-o", dir.path("out1"), proxy.url(for: "file.bin")])
        #expect(cut.status == 18, "\(cut)")  // CURLE_PARTIAL_FILE
        let headBytes = try Data(contentsOf: URL(fileURLWithPath: dir.path("head1"))).count
        let bodyBytes = try Data(contentsOf: URL(fileURLWithPath: dir.path("out1"))).count
        #expect(headBytes + bodyBytes == 100_000)

        let passed = try await runProcess(curlBinary, ["-sS", "-o", dir.path("out2"), proxy.url(for: "file.bin")])
        #expect(passed.status == 0, "\(passed)")
        #expect(try sha256(file: dir.path("out2")) == digest)

        #expect(proxy.connectionCount == 2)
        let connections = proxy.connections
        #expect(connections[0].triggered && connections[0].bytesDownstream == 100_000)
        #expect(!connections[1].triggered && connections[1].bytesDownstream > 2_000_000)
        #expect(proxy.bytesUpstream > 0)
    }

    /// A cut held for the interim response: 1,000 bytes into a creation (its head and the body's start) the proxy
    /// waits for NIOResumableUpload's 104, passes it to the client, and only then cuts.
    @Test func faultProxyHoldsACutUntilTheInterimResponse() async throws {
        let dir = try TempDirectory()
        try makeRandomFile(path: dir.path("body.bin"), size: 2_000_000, seed: 5)
        let peer = try await UploadPeer()
        let proxy = try FaultProxy(
            upstreamPort: peer.port, plan: [Fault.cutAfterUpstream(bytes: 1_000).afterInterimResponse()])
        let r = try await runProcess(
            curlBinary,
            [
                "-sS", "-D", dir.path("head"), "-o", "/dev/null", "-H", "Expect:", "-H",
                "Upload-Draft-Interop-Version: 6", "-H", "Upload-Complete: ?1", "--data-binary",
                "@" + dir.path("body.bin"), proxy.url(for: "x.bin"),
            ])
        #expect(r.status != 0, "\(r)")
        let head = try String(contentsOfFile: dir.path("head"), encoding: .utf8)
        #expect(head.hasPrefix("HTTP/1.1 104"), "\(head)")
        let connection = try #require(proxy.connections.first)
        #expect(connection.triggered && connection.bytesUpstream < 2_000_000, "\(connection)")
    }

    @Test func faultProxyResetsRefusesAndStalls() async throws {
        let dir = try TempDirectory()
        let www = try dir.subdirectory("www")
        try makeRandomFile(path: www + "/file.bin", size: 1_000_000, seed: 4)
        let nginx = try await NginxServer(root: www)
        let proxy = try FaultProxy(
            upstreamPort: nginx.port,
            plan: [
                .cutAfterDownstream(bytes: 50_000, reset: true),
                .refuse(),
                .stallAfterDownstream(bytes: 10_000),
            ])
        let url = proxy.url(for: "file.bin")

        let reset = try await runProcess(curlBinary, ["-sS", "-o", "/dev/null", url])
        #expect(reset.status == 56, "\(reset)")  // CURLE_RECV_ERROR: connection reset by peer
        let refused = try await runProcess(curlBinary, ["-sS", "-o", "/dev/null", url])
        #expect(refused.status == 52, "\(refused)")  // CURLE_GOT_NOTHING
        let start = ContinuousClock.now
        let stalled = try await runProcess(curlBinary, ["-sS", "-o", "/dev/null", "--max-time", "1", url])
        #expect(stalled.status == 28, "\(stalled)")  // CURLE_OPERATION_TIMEDOUT
        #expect(ContinuousClock.now - start >= .milliseconds(900))
        #expect(proxy.connections.map(\.bytesDownstream) == [50_000, 0, 10_000])
        // The stalled connection is torn down once curl hangs up.
        try await eventually { proxy.connections[2].closed }

        proxy.refuseConnections(for: .seconds(30))
        let window = try await runProcess(curlBinary, ["-sS", "-o", "/dev/null", url])
        #expect(window.status == 52)
        proxy.setRefusing(false)
        let back = try await runProcess(curlBinary, ["-sS", "-o", "/dev/null", url])
        #expect(back.status == 0, "\(back)")
        #expect(proxy.connectionCount == 5)
    }

    @Test func faultProxyThrottles() async throws {
        let dir = try TempDirectory()
        let www = try dir.subdirectory("www")
        try makeRandomFile(path: www + "/file.bin", size: 300_000, seed: 5)
        let nginx = try await NginxServer(root: www)
        let proxy = try FaultProxy(upstreamPort: nginx.port, plan: [.throttle(bytesPerSecond: 500_000)])
        let start = ContinuousClock.now
        let result = try await runProcess(curlBinary, ["-sS", "-o", "/dev/null", proxy.url(for: "file.bin")])
        #expect(result.status == 0)
        #expect(ContinuousClock.now - start > .milliseconds(500))
    }

    @Test func seededCutPlansRepeat() {
        let a = Fault.randomCuts(seed: 42, count: 5, direction: .downstream, bytes: 1000...9000)
        let b = Fault.randomCuts(seed: 42, count: 5, direction: .downstream, bytes: 1000...9000)
        #expect(a == b)
        #expect(a.allSatisfy { ($0.trigger?.bytes ?? 0) >= 1000 && ($0.trigger?.bytes ?? 0) <= 9000 })
    }

    // MARK: misbehaving server

    @Test func misbehavingServerIgnoresRange() async throws {
        let body = randomBytes(count: 10_000, seed: 6)
        let server = try await MisbehavingServer(content: body, behaviors: [.ignoresRange])
        let dir = try TempDirectory()
        let result = try await runProcess(
            curlBinary, ["-sS", "-r", "10-19", "-D", "-", "-o", dir.path("out"), server.url()])
        #expect(result.stdoutLines.first == "HTTP/1.1 200 OK", "\(result)")
        #expect(!result.stdout.lowercased().contains("accept-ranges"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir.path("out"))) == Data(body))
        let etag = try #require(server.etag)
        #expect(etag.hasPrefix("\"") && result.stdout.contains("ETag: \(etag)"))
        #expect(server.requests.first?.header("Range") == "bytes=10-19")
    }

    @Test func misbehavingServerHonoursIfRangeAndCutsResponses() async throws {
        let body = randomBytes(count: 200_000, seed: 9)
        let server = try await MisbehavingServer(content: body, behaviors: [.cutsEveryResponse(afterBytes: 50_000)])
        let dir = try TempDirectory()
        let etag = try #require(server.etag)
        let first = try await runProcess(curlBinary, ["-sS", "-o", dir.path("out"), server.url()])
        #expect(first.status == 18, "\(first)")
        let resumed = try await runProcess(
            curlBinary,
            ["-sS", "-r", "50000-", "-H", "If-Range: \(etag)", "-D", "-", "-o", dir.path("rest"), server.url()])
        #expect(resumed.stdoutLines.first == "HTTP/1.1 206 Partial Content", "\(resumed)")
        #expect(resumed.stdout.contains("Content-Range: bytes 50000-199999/200000"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir.path("rest"))) == Data(body[50_000..<100_000]))

        server.replaceContent(randomBytes(count: 200_000, seed: 10))
        #expect(server.etag != etag)
        let stale = try await runProcess(
            curlBinary, ["-sS", "-r", "50000-", "-H", "If-Range: \(etag)", "-D", "-", "-o", "/dev/null", server.url()])
        #expect(stale.stdoutLines.first == "HTTP/1.1 200 OK", "\(stale)")
        #expect(server.requests.map(\.finalStatus) == [200, 206, 200])
        #expect(server.requests[1].header("If-Range") == etag)
        #expect(server.requests[0].header("Accept-Encoding") == nil)

        let past = try await runProcess(
            curlBinary, ["-sS", "-r", "300000-", "-D", "-", "-o", "/dev/null", server.url()])
        #expect(past.stdoutLines.first == "HTTP/1.1 416 Range Not Satisfiable", "\(past)")
    }

    @Test func misbehavingServerValidatorsStatusAndDigest() async throws {
        let body = randomBytes(count: 1_000, seed: 11)
        let weak = try await MisbehavingServer(content: body, behaviors: [.weakETagOnly])
        #expect(weak.etag?.hasPrefix("W/\"") == true)
        #expect(weak.lastModified == nil)
        let weakRange = try await runProcess(
            curlBinary,
            ["-sS", "-r", "0-9", "-H", "If-Range: \(weak.etag ?? "")", "-D", "-", "-o", "/dev/null", weak.url()])
        #expect(weakRange.stdoutLines.first == "HTTP/1.1 200 OK", "weak If-Range must not match: \(weakRange)")

        let dated = try await MisbehavingServer(content: body, behaviors: [.lastModifiedOnly])
        #expect(dated.etag == nil)
        let date = try #require(dated.lastModified)
        let datedRange = try await runProcess(
            curlBinary, ["-sS", "-r", "0-9", "-H", "If-Range: \(date)", "-D", "-", "-o", "/dev/null", dated.url()])
        #expect(datedRange.stdoutLines.first == "HTTP/1.1 206 Partial Content", "\(datedRange)")
        #expect(!datedRange.stdout.contains("ETag"))

        let none = try await MisbehavingServer(
            content: body, behaviors: [.noValidator(contentProvider: { $0 == 0 ? [1, 2, 3] : [4, 5] })])
        let head = try await runProcess(curlBinary, ["-sS", "-I", none.url()])
        #expect(!head.stdout.contains("ETag") && !head.stdout.contains("Last-Modified"), "\(head)")
        #expect(head.stdout.contains("Content-Length: 3"))
        let second = try await runProcess(curlBinary, ["-sS", none.url()])
        #expect(Array(second.stdout.utf8) == [4, 5])

        let shortForms = try await MisbehavingServer(content: body, behaviors: [.noValidator(), .status(503)])
        let first = try await runProcess(curlBinary, ["-sS", "-D", "-", "-o", "/dev/null", shortForms.url()])
        let then = try await runProcess(curlBinary, ["-sS", "-D", "-", "-o", "/dev/null", shortForms.url()])
        #expect(first.stdoutLines.first == "HTTP/1.1 503 Service Unavailable" && !first.stdout.contains("Retry-After"))
        #expect(then.stdoutLines.first == "HTTP/1.1 200 OK" && !then.stdout.contains("ETag"), "\(then)")

        let busy = try await MisbehavingServer(
            content: body, behaviors: [.status(503, retryAfter: 2, count: 1), .reprDigest])
        let refused = try await runProcess(curlBinary, ["-sS", "-D", "-", "-o", "/dev/null", busy.url()])
        #expect(refused.stdoutLines.first == "HTTP/1.1 503 Service Unavailable", "\(refused)")
        #expect(refused.stdout.contains("Retry-After: 2"))
        let served = try await runProcess(curlBinary, ["-sS", "-D", "-", "-o", "/dev/null", busy.url()])
        let expected = Data(hexBytes(sha256(body))).base64EncodedString()
        #expect(served.stdout.contains("Repr-Digest: sha-256=:\(expected):"), "\(served)")
        #expect(busy.requestCount == 2)
    }

    // MARK: upload peer

    @Test func uploadPeerStoresASingleRequestUpload() async throws {
        let dir = try TempDirectory()
        let digest = try makeRandomFile(path: dir.path("src.bin"), size: 3_000_000, seed: 12)
        let peer = try await UploadPeer()
        let result = try await runProcess(
            curlBinary,
            [
                "-sS", "-X", "POST", "-T", dir.path("src.bin"), "-H", "Expect:",
                "-H", "Upload-Draft-Interop-Version: 6", "-H", "Upload-Complete: ?1", "-D", "-", "-o", "/dev/null",
                peer.url(for: "up.bin"),
            ])
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.contains("HTTP/1.1 104 Upload Resumption Supported"))
        #expect(result.stdout.contains("Location: http://127.0.0.1:\(peer.port)/resumable_upload/"))
        #expect(result.stdout.contains("HTTP/1.1 201 Created"))
        #expect(try peer.storedSHA256("up.bin") == digest)
        let upload = try #require(peer.upload(named: "up.bin"))
        #expect(upload.completed && upload.bytesReceived == 3_000_000)
        #expect(peer.requests.map(\.responseStatuses) == [[104, 201]])
        #expect(peer.requests.first?.header("Expect") == nil)
    }

    @Test func uploadPeerResumesAfterTheProxyCutsTheUpload() async throws {
        let dir = try TempDirectory()
        let size = 2_000_000
        let digest = try makeRandomFile(path: dir.path("src.bin"), size: size, seed: 13)
        let peer = try await UploadPeer()
        let proxy = try FaultProxy(
            upstreamPort: peer.port,
            plan: [
                // The cut waits for the 104 (sent as soon as the head arrives) to reach the client.
                .cutAfterUpstream(bytes: 700_000).throttled(bytesPerSecond: 4_000_000).afterInterimResponse()
            ])
        let creation = try await runProcess(
            curlBinary,
            [
                "-sS", "-X", "POST", "-T", dir.path("src.bin"), "-H", "Expect:",
                "-H", "Upload-Draft-Interop-Version: 6", "-H", "Upload-Complete: ?1", "-D", "-", "-o", "/dev/null",
                proxy.url(for: "cut.bin"),
            ])
        #expect(creation.status != 0, "\(creation)")
        let location = try #require(creation.stdoutLines.first { $0.hasPrefix("Location: ") }?.dropFirst(10))

        try await eventually { peer.bytesReceived("cut.bin") > 0 }
        let head = try await runProcess(
            curlBinary, ["-sS", "-I", "-H", "Upload-Draft-Interop-Version: 6", String(location)])
        let offsetLine = try #require(
            head.stdoutLines.first { $0.lowercased().hasPrefix("upload-offset: ") }, "\(head)")
        let offset = try #require(Int(offsetLine.dropFirst("upload-offset: ".count)))
        #expect(offset > 0 && offset < 700_000)
        #expect(offset == peer.bytesReceived("cut.bin"))

        let rest = dir.path("rest.bin")
        try Data(contentsOf: URL(fileURLWithPath: dir.path("src.bin"))).dropFirst(offset).write(
            to: URL(fileURLWithPath: rest))
        let patch = try await runProcess(
            curlBinary,
            [
                "-sS", "-X", "PATCH", "-T", rest, "-H", "Expect:", "-H", "Upload-Draft-Interop-Version: 6",
                "-H", "Content-Type: application/partial-upload", "-H", "Upload-Offset: \(offset)",
                "-H", "Upload-Complete: ?1", "-D", "-", "-o", "/dev/null", String(location),
            ])
        #expect(patch.stdoutLines.first == "HTTP/1.1 201 Created", "\(patch)")
        #expect(try peer.storedSHA256("cut.bin") == digest)
        #expect(peer.upload(named: "cut.bin")?.completed == true)
        #expect(peer.requests.map(\.method) == ["POST", "HEAD", "PATCH"])
        #expect(proxy.connections.first?.bytesUpstream ?? 0 == 700_000)
    }

    @Test func uploadPeerPlainModeStoresWithoutResumption() async throws {
        let dir = try TempDirectory()
        let digest = try makeRandomFile(path: dir.path("src.bin"), size: 2_000_000, seed: 14)
        let peer = try await UploadPeer(plainMode: true)
        // No `Expect:` override: curl sends `Expect: 100-continue` (> 1 MiB) and the plain peer answers 100.
        let result = try await runProcess(
            curlBinary,
            [
                "-sS", "-X", "POST", "-T", dir.path("src.bin"),
                "-H", "Upload-Draft-Interop-Version: 6", "-H", "Upload-Complete: ?1", "-D", "-", "-o", "/dev/null",
                peer.url(for: "plain.bin"),
            ])
        #expect(result.status == 0, "\(result)")
        #expect(
            result.stdout.contains("HTTP/1.1 100 Continue"), "the plain peer answers 100-continue: \(result.stdout)")
        #expect(!result.stdout.contains("104"))
        #expect(try peer.storedSHA256("plain.bin") == digest)
        #expect(peer.requests.map(\.responseStatuses) == [[100, 201]])
    }
}

private func hexBytes(_ hex: String) -> [UInt8] {
    var bytes: [UInt8] = []
    var index = hex.startIndex
    while index < hex.endIndex {
        let next = hex.index(index, offsetBy: 2)
        bytes.append(UInt8(hex[index..<next], radix: 16)!)
        index = next
    }
    return bytes
}
