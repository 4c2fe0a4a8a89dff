import Foundation
import Testing

/// One file from several nginx mirrors (`--mirror`): segments spread over them, a dead or corrupt mirror dropped,
/// the file right by SHA-256, and a kill resumed from every mirror.
@Suite struct MirrorDownloadTests {
    static let size = 8 << 20

    /// Three nginx servers of the file; `corrupt` of them serve it with the third MiB changed.
    static func mirrors(_ w: Workspace, corrupt: Set<Int> = [], limitRate: Int) async throws -> (
        servers: [NginxServer], digest: String
    ) {
        let good = randomBytes(count: size, seed: 57)
        var servers: [NginxServer] = []
        for i in 0..<3 {
            var bytes = good
            if corrupt.contains(i) { for j in (2 << 20)..<(3 << 20) { bytes[j] ^= 0x5a } }
            try FileManager.default.createDirectory(atPath: w.path("www\(i)"), withIntermediateDirectories: true)
            try Data(bytes).write(to: URL(fileURLWithPath: w.path("www\(i)/f.bin")))
            servers.append(try await NginxServer(root: w.path("www\(i)"), limitRate: limitRate))
        }
        return (servers, sha256(good))
    }

    static func args(_ servers: [NginxServer], digest: String) -> [String] {
        [
            "download", servers[0].url(for: "f.bin"), "--mirror", servers[1].url(for: "f.bin"), "--mirror",
            servers[2].url(for: "f.bin"), "--checksum", "sha256=\(digest)", "-o", "f.bin",
        ]
    }

    @Test func segmentsSpreadOverEveryMirrorAndACorruptOneIsFoundByTheChecksum() async throws {
        let w = try Workspace()
        // The third mirror takes the third segment (the least busy mirror gets the next one, in order).
        let (servers, digest) = try await Self.mirrors(w, corrupt: [2], limitRate: 4_000_000)
        let r = try await w.run(Self.args(servers, digest: digest) + ["--json"])
        #expect(r.status == 0, "\(r)")
        #expect(try sha256(file: w.out + "/f.bin") == digest)
        #expect(r.stderr.contains("mirror \(servers[2].url(for: "f.bin")) dropped"), "\(r.stderr)")
        #expect(!r.stderr.contains("mirror \(servers[0].url(for: "f.bin")) dropped"), "\(r.stderr)")
        for server in servers {
            let ranged = server.accessLog().filter { $0.hasPrefix("206 GET") && $0.contains("if_range=\"\\x22") }
            #expect(!ranged.isEmpty, "\(server.accessLog())")
        }
        #expect(try w.tokens().isEmpty)
    }

    @Test func aMirrorThatDiesIsDroppedAndTheOthersFinish() async throws {
        let w = try Workspace()
        let (servers, digest) = try await Self.mirrors(w, limitRate: 150_000)
        let p = try w.start(Self.args(servers, digest: digest) + ["--json"])
        _ = try await p.waitForLine { $0.contains("\"progress\"") }
        servers[1].stop()
        #expect(p.isRunning)
        let r = try await p.wait()
        #expect(r.status == 0, "\(r)")
        #expect(try sha256(file: w.out + "/f.bin") == digest)
        #expect(r.stderr.contains("mirror \(servers[1].url(for: "f.bin")) dropped"), "\(r.stderr)")
    }

    @Test func aKilledMirrorDownloadResumesEachSegmentFromItsBytes() async throws {
        let w = try Workspace()
        let (servers, digest) = try await Self.mirrors(w, limitRate: 150_000)
        let p = try w.start(Self.args(servers, digest: digest) + ["--json"])
        _ = try await p.waitForLine { $0.contains("\"progress\"") }
        // Killed once a checkpoint committed bytes: under load the first one may come late.
        func committed() -> Int {
            let download = (try? w.tokens().first).flatMap { try? w.token($0)["download"] as? [String: Any] }
            return (download?["segments"] as? [[String: Any]] ?? []).compactMap { $0["committed"] as? Int }.reduce(0, +)
        }
        for _ in 0..<600 where committed() == 0 { try await Task.sleep(for: .milliseconds(100)) }
        #expect(p.isRunning)
        p.send(signal: SIGKILL)
        _ = try await p.wait()
        let id = try #require(try w.tokens().first)
        let download = try #require(try w.token(id)["download"] as? [String: Any])
        #expect((download["mirrors"] as? [[String: Any]])?.count == 3)
        let segments = try #require(download["segments"] as? [[String: Any]])
        let held = segments.compactMap { $0["committed"] as? Int }.reduce(0, +)
        #expect(held > 0 && held < Self.size, "\(segments)")
        let show = try await w.run(["show", id])
        #expect(show.stderr.contains("3 of 3 mirrors in use"), "\(show)")
        let sent = servers.map { $0.accessLog().count }
        let r = try await w.run(["resume", id])
        #expect(r.status == 0, "\(r)")
        #expect(try sha256(file: w.out + "/f.bin") == digest)
        // What the resume fetched is what was missing, give or take the overlap each resumed segment asks again.
        let fetched = zip(servers, sent).flatMap { $0.accessLog().dropFirst($1) }.compactMap { line in
            line.split(separator: " ").first { $0.hasPrefix("sent=") }.flatMap { Int($0.dropFirst(5)) }
        }.reduce(0, +)
        #expect(fetched <= Self.size - held + segments.count * 65_536, "fetched \(fetched), held \(held)")
        // `resume` takes no --connections: it runs as many as the download began with, over every mirror.
        #expect(download["connections"] as? Int == 6)
        #expect(zip(servers, sent).allSatisfy { $0.accessLog().count > $1 }, "\(servers.map { $0.accessLog() })")
    }

    @Test func aMetalinkFromAURLChecksEachPieceAsItLandsAndDropsTheMirrorOfABadOne() async throws {
        let w = try Workspace()
        let (servers, digest) = try await Self.mirrors(w, corrupt: [2], limitRate: 4_000_000)
        let good = try [UInt8](Data(contentsOf: URL(fileURLWithPath: w.path("www0/f.bin"))))
        try SoakTests.metalink(good, urls: servers.map { $0.url(for: "f.bin") })
            .write(toFile: w.path("www0/f.meta4"), atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: w.out + "/into", withIntermediateDirectories: true)
        let r = try await w.run(["download", servers[0].url(for: "f.meta4"), "-o", "into/", "--json"])
        #expect(r.status == 0, "\(r)")
        #expect(try sha256(file: w.out + "/into/f.bin") == digest)
        #expect(r.stderr.contains("mirror \(servers[2].url(for: "f.bin")) dropped: piece 2 fails its sha-256"), "\(r)")
        // The third piece came whole from the corrupt mirror, was refused, and came again from another.
        let third = servers.flatMap { $0.accessLog() }.filter { $0.contains("range=\"bytes=2097152-3145727\"") }
        #expect(third.count == 2, "\(third)")
    }

    @Test(arguments: [
        ("<file name=\"../up.bin\">", "name"), ("<file name=\"/etc/x\">", "name"),
        ("<size>1099511627776000</size>", "size"),
    ])
    func aHostileMetalinkIsOneLineAndNothingWritten(change: String, word: String) async throws {
        let w = try Workspace()
        let doc = SoakTests.metalink([1, 2, 3], urls: ["http://127.0.0.1:9/f.bin"])
            .replacingOccurrences(
                of: "<file name=\"f.bin\">", with: change.hasPrefix("<file") ? change : "<file name=\"f.bin\">"
            )
            .replacingOccurrences(of: "<size>3</size>", with: change.hasPrefix("<size") ? change : "<size>3</size>")
        try doc.write(toFile: w.path("h.meta4"), atomically: true, encoding: .utf8)
        let r = try await w.run(["download", w.path("h.meta4")])
        #expect(r.status == 65, "\(r)")
        #expect(r.stderr.split(separator: "\n").count == 1 && r.stderr.contains(word), "\(r)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: w.out).isEmpty)
        #expect(try w.tokens().isEmpty)
    }

    @Test func mirrorsWithoutAChecksumAreRefused() async throws {
        let w = try Workspace()
        let r = try await w.run(["download", "http://127.0.0.1:9/f", "--mirror", "http://127.0.0.1:9/g"])
        #expect(r.status == 64, "\(r)")
        #expect(r.stderr.contains("only when a checksum vouches for them"), "\(r)")
        #expect(r.stderr.split(separator: "\n").count == 1)
    }
}
