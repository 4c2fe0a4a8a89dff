import Foundation
import Testing

/// `make soak`: one file from three nginx mirrors at scale (RESUMECTL_SOAK_MIRROR_SIZE, default 256 MiB), each
/// limited to 4 MB/s a connection: one mirror serves a copy with 1 MiB changed, one dies, the download is killed
/// twice. Their speed against one mirror and aria2c is `make bench`'s case `mirrors`.
extension SoakTests {
    static let mirrorSize = Int(env["RESUMECTL_SOAK_MIRROR_SIZE"] ?? "") ?? 256 << 20
    static let piece = 1 << 20

    /// Three nginx servers of one file; the first serves it with its first MiB changed (the first mirror listed
    /// takes the first segment: its bad bytes are certain to be fetched).
    static func mirrors(_ w: Workspace) async throws -> (servers: [NginxServer], bytes: [UInt8], corrupt: Int) {
        let good = randomBytes(count: mirrorSize, seed: 157)
        let corrupt = 0
        var servers: [NginxServer] = []
        for i in 0..<3 {
            var bytes = good
            if i == 0 { for j in corrupt..<min(mirrorSize, corrupt + piece) { bytes[j] ^= 0xa5 } }
            try FileManager.default.createDirectory(atPath: w.path("www\(i)"), withIntermediateDirectories: true)
            try Data(bytes).write(to: URL(fileURLWithPath: w.path("www\(i)/f.bin")))
            servers.append(try await NginxServer(root: w.path("www\(i)"), limitRate: 4_000_000))
        }
        return (servers, good, corrupt)
    }

    /// RFC 5854 Metalink of `bytes` with SHA-256 pieces.
    static func metalink(_ bytes: [UInt8], urls: [String]) -> String {
        let pieces = stride(from: 0, to: bytes.count, by: piece).map {
            "<hash>\(sha256(bytes[$0..<min(bytes.count, $0 + piece)]))</hash>"
        }
        return """
            <?xml version="1.0" encoding="UTF-8"?>
            <metalink xmlns="urn:ietf:params:xml:ns:metalink"><file name="f.bin"><size>\(bytes.count)</size>
            <hash type="sha-256">\(sha256(bytes))</hash><pieces length="\(piece)" type="sha-256">
            \(pieces.joined(separator: "\n"))</pieces>
            \(urls.enumerated().map { "<url priority=\"\($0 + 1)\">\($1)</url>" }.joined(separator: "\n"))
            </file></metalink>
            """
    }

    /// Waits until the download's `progress` events pass `fraction` of the file.
    static func waitFor(_ fraction: Double, _ p: RunningProcess) async throws {
        _ = try await p.waitForLine { line in
            guard line.contains("\"progress\""), let data = line.data(using: .utf8),
                let event = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
                let bytes = event["bytes"] as? Int
            else { return false }
            return Double(bytes) >= fraction * Double(mirrorSize)
        }
    }

    /// The body bytes the mirrors sent, by their access logs.
    static func bodyBytes(_ servers: [NginxServer]) -> Int {
        servers.flatMap { $0.accessLog() }.compactMap { line in
            line.split(separator: " ").first { $0.hasPrefix("sent=") }.flatMap { Int($0.dropFirst(5)) }
        }.reduce(0, +)
    }

    /// Ranged answers a mirror sent in full, by their first byte: a piece sent whole twice is fetched twice.
    static func wholePieces(_ server: NginxServer) -> [Int] {
        server.accessLog().compactMap { line in
            let words = line.split(separator: " ")
            guard let range = words.first(where: { $0.hasPrefix("range=\"bytes=") }),
                let sent = words.first(where: { $0.hasPrefix("sent=") }).flatMap({ Int($0.dropFirst(5)) }),
                let first = Int(range.dropFirst(13).prefix { $0.isNumber }), first % piece == 0,
                sent >= min(piece, mirrorSize - first)
            else { return nil }
            return first
        }
    }

    @Test func mirrorsWithPieceHashesThroughADeadMirrorACorruptOneAndTwoKills() async throws {
        let w = try Workspace()
        let (servers, bytes, corrupt) = try await Self.mirrors(w)
        let meta = w.path("f.meta4")
        try Self.metalink(bytes, urls: servers.map { $0.url(for: "f.bin") })
            .write(toFile: meta, atomically: true, encoding: .utf8)
        var stderr = ""
        // Killed at a quarter, the second mirror stopped at half, killed again at 60%, then to the end.
        var p = try w.start(["download", meta, "--connections", "6", "--json"])
        try await Self.waitFor(0.25, p)
        #expect(p.isRunning)
        p.send(signal: SIGKILL)
        stderr += try await p.wait().stderr
        let id = try #require(try w.tokens().first)
        p = try w.start(["resume", id, "--json"])
        try await Self.waitFor(0.5, p)
        servers[1].stop()
        try await Self.waitFor(0.6, p)
        #expect(p.isRunning)
        p.send(signal: SIGKILL)
        stderr += try await p.wait().stderr
        let r = try await w.run(["resume", id, "--json"], timeout: .seconds(900))
        stderr += r.stderr
        let ok = r.status == 0 && (try? sha256(file: w.out + "/f.bin")) == sha256(bytes)
        let whole = servers.flatMap(Self.wholePieces)
        let twice = Dictionary(grouping: whole, by: { $0 }).filter { $0.value.count > 1 }.keys.sorted()
        let sent = Self.bodyBytes(servers)
        Self.row(
            "mirrors, pieces: dead+corrupt+2 kills", faults: 4, finished: r.status == 0,
            resent: max(0, sent - Self.mirrorSize), mismatch: r.status == 0 && !ok)
        print("soak | mirrors | pieces fetched whole twice: \(twice) (the corrupt one starts at \(corrupt))")
        #expect(ok, "\(r)")
        #expect(stderr.contains("mirror \(servers[0].url(for: "f.bin")) dropped"), "\(stderr)")
        #expect(stderr.contains("mirror \(servers[1].url(for: "f.bin")) dropped"), "\(stderr)")
        #expect(twice.count < 2, "\(twice)")
    }

    @Test func mirrorsWithoutPieceHashesFindTheCorruptOne() async throws {
        let w = try Workspace()
        let (servers, bytes, _) = try await Self.mirrors(w)
        let r = try await w.run(
            [
                "download", servers[0].url(for: "f.bin"), "--mirror", servers[1].url(for: "f.bin"), "--mirror",
                servers[2].url(for: "f.bin"), "--checksum", "sha256=\(sha256(bytes))", "--connections", "6",
            ],
            timeout: .seconds(900))
        let ok = r.status == 0 && (try? sha256(file: w.out + "/f.bin")) == sha256(bytes)
        let sent = Self.bodyBytes(servers)
        Self.row(
            "mirrors, checksum only: corrupt", faults: 1, finished: r.status == 0,
            resent: max(0, sent - Self.mirrorSize), mismatch: r.status == 0 && !ok)
        #expect(ok, "\(r)")
        #expect(r.stderr.contains("mirror \(servers[0].url(for: "f.bin")) dropped"), "\(r.stderr)")
    }
}
