import Foundation
import Testing

/// `resumectl download` and `resume` against nginx (through a cutting proxy where a fault is needed),
/// and against our misbehaving server for what nginx cannot do.
@Suite struct DownloadTests {
    static let size = 3_000_000

    /// nginx serving `f.bin` (random, seeded) from the harness's `www/`.
    func nginxWithFile(_ h: Workspace, seed: UInt64 = 1, limitRate: Int? = nil) async throws -> (NginxServer, String) {
        let digest = try makeRandomFile(path: h.path("www/f.bin"), size: Self.size, seed: seed)
        return (try await NginxServer(root: h.path("www"), limitRate: limitRate), digest)
    }

    @Test func fullDownloadIsByteExactAndLeavesNothingBehind() async throws {
        let h = try Workspace()
        let (nginx, digest) = try await nginxWithFile(h)
        let r = try await h.run(["download", nginx.url(for: "f.bin")])
        #expect(r.status == 0, "\(r)")
        #expect(r.stdout == h.out + "/f.bin\n")
        #expect(try sha256(file: h.out + "/f.bin") == digest)
        #expect(!h.exists(h.out + "/f.bin.part"))
        #expect(try h.tokens().isEmpty)
        // Ranges address the bytes as sent: never ask for an encoding.
        #expect(nginx.accessLog().allSatisfy { $0.contains("accept_encoding=\"-\"") }, "\(nginx.accessLog())")
    }

    /// `--limit-rate` holds from the first byte, even where a server on loopback fills the socket faster than
    /// libcurl reads: 3 MB at 500 KiB/s take about 6 s (a load can only make it slower), never the 0.1 s the
    /// first megabytes took when libcurl read 100 buffers of 1/16 s each in one go.
    @Test func theRateLimitHoldsFromTheFirstByte() async throws {
        let h = try Workspace()
        let (nginx, digest) = try await nginxWithFile(h)
        let began = ContinuousClock.now
        let r = try await h.run(["download", nginx.url(for: "f.bin"), "--limit-rate", "500K", "-q"])
        let took = ContinuousClock.now - began
        #expect(r.status == 0, "\(r)")
        #expect(try sha256(file: h.out + "/f.bin") == digest)
        #expect(took >= .seconds(4), "3 MB at 500 KiB/s in \(took)")
    }

    @Test func jsonStreamCarriesOnlyEvents() async throws {
        let h = try Workspace()
        let (nginx, digest) = try await nginxWithFile(h)
        let r = try await h.run(["download", nginx.url(for: "f.bin"), "-o", "x.bin", "--json"])
        #expect(r.status == 0, "\(r)")
        let e = events(r.stdout)
        #expect(names(e).first == "started" && names(e).last == "completed")
        #expect(e.first("completed")?["sha256"] as? String == digest)
        #expect(e.first("completed")?["path"] as? String == h.out + "/x.bin")
        #expect(e.first("started")?["total"] as? Int == Self.size)
        let token = e.first("started")?["token"] as? String ?? ""
        #expect(token.hasPrefix("d-") && e.allSatisfy { $0["token"] as? String == token })
    }

    @Test func connectionCutMidwayIsResumedWithIfRange() async throws {
        let h = try Workspace()
        let (nginx, digest) = try await nginxWithFile(h)
        let proxy = try FaultProxy(
            upstreamPort: nginx.port,
            plan: [.cutAfterDownstream(bytes: 1_000_000), .cutAfterDownstream(bytes: 700_000, reset: true)])
        let r = try await h.run(["download", proxy.url(for: "f.bin"), "--json", "--retry-delay", "0.05"])
        #expect(r.status == 0, "\(r)")
        #expect(try sha256(file: h.out + "/f.bin") == digest)
        #expect(names(events(r.stdout)).filter { $0 == "retry" }.count == 2)
        let log = nginx.accessLog()
        #expect(log.count == 3)
        #expect(log.dropFirst().allSatisfy { $0.hasPrefix("206") && $0.contains("if_range=\"\\x22") }, "\(log)")
        // Nothing fetched twice beyond what the cuts lost and the two resumes' overlaps (64 KiB each,
        // compared with the disk): 3 MB, 128 KiB and three response heads.
        #expect(proxy.bytesDownstream < Self.size + 2 * 65_536 + 2_000, "\(proxy.bytesDownstream)")
    }

    @Test func interruptedRunResumesFromItsToken() async throws {
        let h = try Workspace()
        let (nginx, digest) = try await nginxWithFile(h, limitRate: 300_000)
        let p = try h.start(["download", nginx.url(for: "f.bin"), "--json"])
        _ = try await p.waitForLine { $0.contains("\"progress\"") && !$0.contains("\"bytes\":0,") }
        p.send(signal: SIGINT)
        let stopped = try await p.wait()
        #expect(stopped.status == 130, "\(stopped)")
        #expect(stopped.stderr.contains("resumectl resume d-"))
        #expect(names(events(stopped.stdout)).suffix(2) == ["paused", "failed"])
        let ids = try h.tokens()
        #expect(ids.count == 1)
        let committed = (try h.token(ids[0])["download"] as? [String: Any])?["committedBytes"] as? Int ?? 0
        #expect(committed > 0 && committed == h.size(h.out + "/f.bin.part"))

        let r = try await h.run(["resume", ids[0]])
        #expect(r.status == 0, "\(r)")
        #expect(try sha256(file: h.out + "/f.bin") == digest)
        // The resume asks again for up to 64 KiB before the committed offset, to compare them with the disk.
        let overlapStart = committed - min(committed, 65_536)
        #expect(nginx.accessLog().last?.contains("range=\"bytes=\(overlapStart)-\"") == true, "\(nginx.accessLog())")
        #expect(try h.tokens().isEmpty)
    }

    @Test func fileReplacedOnTheServerIsFetchedAnewNotSpliced() async throws {
        let h = try Workspace()
        let (nginx, _) = try await nginxWithFile(h, limitRate: 300_000)
        let p = try h.start(["download", nginx.url(for: "f.bin"), "--json"])
        _ = try await p.waitForLine { $0.contains("\"progress\"") }  // running, whatever the machine's load
        try await Task.sleep(for: .milliseconds(1000))
        p.send(signal: SIGTERM)
        #expect(try await p.wait().status == 75)
        // A new file of the same size: only the ETag (mtime) tells them apart.
        let newDigest = try makeRandomFile(path: h.path("www/f.tmp"), size: Self.size, seed: 2)
        try FileManager.default.removeItem(atPath: h.path("www/f.bin"))
        try FileManager.default.moveItem(atPath: h.path("www/f.tmp"), toPath: h.path("www/f.bin"))
        var when = Date().addingTimeInterval(5)
        try FileManager.default.setAttributes([.modificationDate: when], ofItemAtPath: h.path("www/f.bin"))
        when = when.addingTimeInterval(0)
        let r = try await h.run(["resume", try #require(try h.tokens().first), "--json"])
        #expect(r.status == 0, "\(r)")
        #expect(try sha256(file: h.out + "/f.bin") == newDigest)
        #expect(events(r.stdout).first("restarted")?["reason"] as? String == "the file changed on the server")
    }

    @Test func changedFileFailsWithOnChangeFail() async throws {
        let h = try Workspace()
        let server = try await MisbehavingServer(
            content: randomBytes(count: 2_000_000, seed: 5), behaviors: [.cutsEveryResponse(afterBytes: 500_000)])
        let p = try await h.run(["download", server.url(), "-o", "c.bin", "--on-change", "fail", "--retries", "0"])
        #expect(p.status == 75, "\(p)")
        server.replaceContent(randomBytes(count: 2_000_000, seed: 6))
        let r = try await h.run(["resume", try #require(try h.tokens().first)])
        #expect(r.status == 1, "\(r)")
        #expect(r.stderr.contains("changed"), "\(r)")
        #expect(!h.exists(h.out + "/c.bin"))
    }

    @Test func alreadyCompleteRerunFetchesNothing() async throws {
        let h = try Workspace()
        let (nginx, _) = try await nginxWithFile(h)
        #expect(try await h.run(["download", nginx.url(for: "f.bin")]).status == 0)
        let before = nginx.accessLog().count
        let again = try await h.run(["download", nginx.url(for: "f.bin")])
        #expect(again.status == 0, "\(again)")
        #expect(again.stdout == h.out + "/f.bin\n")
        #expect(nginx.accessLog().count == before)
    }

    @Test func wrongChecksumKeepsThePartAndExits65() async throws {
        let h = try Workspace()
        let (nginx, _) = try await nginxWithFile(h)
        let r = try await h.run([
            "download", nginx.url(for: "f.bin"), "--checksum", "sha256=" + String(repeating: "0", count: 64),
        ])
        #expect(r.status == 65, "\(r)")
        #expect(r.stderr.contains("checksum mismatch"))
        #expect(!h.exists(h.out + "/f.bin"))
        #expect(h.size(h.out + "/f.bin.part") == Self.size)
    }

    @Test func rightChecksumPasses() async throws {
        let h = try Workspace()
        let (nginx, digest) = try await nginxWithFile(h)
        #expect(try await h.run(["download", nginx.url(for: "f.bin"), "--checksum", "sha256=" + digest]).status == 0)
    }

    @Test func wrongReprDigestIsCaught() async throws {
        let h = try Workspace()
        let server = try await MisbehavingServer(
            content: randomBytes(count: 500_000, seed: 3), behaviors: [.wrongReprDigest])
        let r = try await h.run(["download", server.url(), "-o", "d.bin"])
        #expect(r.status == 65, "\(r)")
        #expect(!h.exists(h.out + "/d.bin"))
    }

    @Test func rightReprDigestAcrossCuts() async throws {
        let h = try Workspace()
        let content = randomBytes(count: 2_000_000, seed: 4)
        let server = try await MisbehavingServer(
            content: content, behaviors: [.reprDigest, .cutsEveryResponse(afterBytes: 600_000)])
        let r = try await h.run(["download", server.url(), "-o", "d.bin", "--retry-delay", "0.01"])
        #expect(r.status == 0, "\(r)")
        #expect(try sha256(file: h.out + "/d.bin") == sha256(content))
        let ranged = server.requests.dropFirst()
        #expect(ranged.count >= 3 && ranged.allSatisfy { $0.header("If-Range") != nil && $0.header("Range") != nil })
    }

    @Test func serverIgnoringRangeRestartsCleanly() async throws {
        let h = try Workspace()
        let content = randomBytes(count: 2_000_000, seed: 7)
        let server = try await MisbehavingServer(content: content, behaviors: [.ignoresRange])
        let proxy = try FaultProxy(upstreamPort: server.port, plan: [.cutAfterDownstream(bytes: 800_000)])
        let r = try await h.run([
            "download", proxy.url(for: "file.bin"), "-o", "r.bin", "--json", "--retry-delay", "0.01",
        ])
        #expect(r.status == 0, "\(r)")
        #expect(try sha256(file: h.out + "/r.bin") == sha256(content))
        #expect(events(r.stdout).first("restarted")?["reason"] as? String == "the server ignored the range request")
    }

    @Test func weakETagNeverResumesUnvalidated() async throws {
        let h = try Workspace()
        let content = randomBytes(count: 2_000_000, seed: 8)
        let server = try await MisbehavingServer(content: content, behaviors: [.weakETagOnly])
        let proxy = try FaultProxy(upstreamPort: server.port, plan: [.cutAfterDownstream(bytes: 800_000)])
        let r = try await h.run(["download", proxy.url(for: "file.bin"), "-o", "w.bin", "--retry-delay", "0.01"])
        #expect(r.status == 0, "\(r)")
        #expect(try sha256(file: h.out + "/w.bin") == sha256(content))
        #expect(server.requests.allSatisfy { $0.header("Range") == nil && $0.header("If-Range") == nil })
    }

    @Test func noValidatorAndChangingContentGivesTheNewContent() async throws {
        let h = try Workspace()
        let first = randomBytes(count: 1_500_000, seed: 9)
        let second = randomBytes(count: 1_500_000, seed: 10)
        let server = try await MisbehavingServer(
            content: first, behaviors: [.noValidator(contentProvider: { n in n == 0 ? first : second })])
        let proxy = try FaultProxy(upstreamPort: server.port, plan: [.cutAfterDownstream(bytes: 700_000)])
        let r = try await h.run(["download", proxy.url(for: "file.bin"), "-o", "n.bin", "--retry-delay", "0.01"])
        #expect(r.status == 0, "\(r)")
        #expect(try sha256(file: h.out + "/n.bin") == sha256(second))
    }

    @Test func serviceUnavailableWithRetryAfterIsRetried() async throws {
        let h = try Workspace()
        let content = randomBytes(count: 100_000, seed: 11)
        let server = try await MisbehavingServer(content: content, behaviors: [.status(503, retryAfter: 1, count: 2)])
        let r = try await h.run(["download", server.url(), "-o", "s.bin", "--json"])
        #expect(r.status == 0, "\(r)")
        #expect(try sha256(file: h.out + "/s.bin") == sha256(content))
        let retries = events(r.stdout).filter { $0["event"] as? String == "retry" }
        #expect(retries.count == 2 && retries.allSatisfy { $0["delay"] as? Double == 1 })
    }

    @Test func notFoundFailsAtOnceWithoutToken() async throws {
        let h = try Workspace()
        let (nginx, _) = try await nginxWithFile(h)
        let r = try await h.run(["download", nginx.url(for: "missing.bin"), "--json"])
        #expect(r.status == 1, "\(r)")
        #expect(r.stderr.contains("404"))
        #expect(events(r.stdout).first("failed")?["resumable"] as? Bool == false)
        #expect(try h.tokens().isEmpty && !h.exists(h.out + "/missing.bin") && !h.exists(h.out + "/missing.bin.part"))
    }

    @Test func unreachableServerRunsOutOfRetriesAndKeepsNothingBroken() async throws {
        let h = try Workspace()
        let port = try freePort()
        let r = try await h.run([
            "download", "http://127.0.0.1:\(port)/f.bin", "--retries", "2", "--retry-delay", "0.01",
        ])
        #expect(r.status == 75, "\(r)")
        #expect(r.stderr.contains("gave up after 2 retries"))
    }

    @Test func unknownHostFailsAtOnce() async throws {
        let h = try Workspace()
        let r = try await h.run(["download", "http://no-such-host.invalid/f.bin"])
        #expect(r.status == 1, "\(r)")
        #expect(r.stderr.split(separator: "\n").count == 1)
    }

    @Test func existingFileIsNotOverwrittenWithoutForce() async throws {
        let h = try Workspace()
        let (nginx, digest) = try await nginxWithFile(h)
        #expect(FileManager.default.createFile(atPath: h.out + "/f.bin", contents: Data("mine".utf8)))
        #expect(try await h.run(["download", nginx.url(for: "f.bin")]).status == 0)
        #expect(try String(contentsOfFile: h.out + "/f.bin", encoding: .utf8) == "mine")
        #expect(try await h.run(["download", nginx.url(for: "f.bin"), "--force"]).status == 0)
        #expect(try sha256(file: h.out + "/f.bin") == digest)
    }

    @Test func replacementURLIsAcceptedOnlyForTheSameFile() async throws {
        let h = try Workspace()
        let content = randomBytes(count: 2_000_000, seed: 12)
        let server = try await MisbehavingServer(content: content, behaviors: [.cutsEveryResponse(afterBytes: 700_000)])
        let same = try await MisbehavingServer(content: content)
        let other = try await MisbehavingServer(content: randomBytes(count: 2_000_000, seed: 13))
        #expect(try await h.run(["download", server.url(), "-o", "u.bin", "--retries", "0"]).status == 75)
        let id = try #require(try h.tokens().first)
        let refused = try await h.run(["resume", id, "--url", other.url()])
        #expect(refused.status == 1, "\(refused)")
        let r = try await h.run(["resume", id, "--url", same.url()])
        #expect(r.status == 0, "\(r)")
        #expect(try sha256(file: h.out + "/u.bin") == sha256(content))
    }
}
