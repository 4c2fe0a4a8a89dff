import Foundation
import Testing

/// `make soak`: one file from three nginx mirrors at scale (RESUMECTL_SOAK_MIRROR_SIZE, default 256 MiB), each
/// behind a proxy that forwards 4 MB/s a connection (nginx's `limit_rate` lets the first second of a response
/// through unthrottled, so a 1 MiB piece would not be slowed): one mirror serves a copy with 1 MiB changed, one
/// dies, the download is killed twice. Their speed against one mirror and aria2c is `make bench`'s case `mirrors`.
extension SoakTests {
    static let mirrorSize = Int(env["RESUMECTL_SOAK_MIRROR_SIZE"] ?? "") ?? 256 << 20
    static let piece = 1 << 20

    struct Mirror {
        let server: NginxServer
        let proxy: FaultProxy
        var url: String { proxy.url(for: "f.bin") }
    }

    /// Three mirrors of one file; the first serves it with its first MiB changed (the first mirror listed
    /// takes the first segment: its bad bytes are certain to be fetched).
    static func mirrors(_ w: Workspace) async throws -> (mirrors: [Mirror], bytes: [UInt8], corrupt: Int) {
        let good = randomBytes(count: mirrorSize, seed: 157)
        let corrupt = 0
        var mirrors: [Mirror] = []
        for i in 0..<3 {
            var bytes = good
            if i == 0 { for j in corrupt..<min(mirrorSize, corrupt + piece) { bytes[j] ^= 0xa5 } }
            try FileManager.default.createDirectory(atPath: w.path("www\(i)"), withIntermediateDirectories: true)
            try Data(bytes).write(to: URL(fileURLWithPath: w.path("www\(i)/f.bin")))
            let server = try await NginxServer(root: w.path("www\(i)"))
            let throttled = Array(repeating: Fault.throttle(bytesPerSecond: 4_000_000), count: 10_000)
            mirrors.append(Mirror(server: server, proxy: try FaultProxy(upstreamPort: server.port, plan: throttled)))
        }
        return (mirrors, good, corrupt)
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
    static func wholePieces(_ log: [String]) -> [Int] {
        log.compactMap { line in
            let words = line.split(separator: " ")
            guard let range = words.first(where: { $0.hasPrefix("range=\"bytes=") }),
                let sent = words.first(where: { $0.hasPrefix("sent=") }).flatMap({ Int($0.dropFirst(5)) }),
                let first = Int(range.dropFirst(13).prefix { $0.isNumber }), first % piece == 0,
                sent >= min(piece, mirrorSize - first)
            else { return nil }
            return first
        }
    }

    /// The token's pieces whole at this moment, by first byte.
    static func committedPieces(_ w: Workspace, _ id: String) throws -> Set<Int> {
        let download = try w.token(id)["download"] as? [String: Any]
        let segments = download?["segments"] as? [[String: Any]] ?? []
        return Set(
            segments.flatMap { s -> [Int] in
                guard let start = s["start"] as? Int, let committed = s["committed"] as? Int else { return [] }
                return stride(from: start, to: start + committed - piece + 1, by: piece).map { $0 }
            })
    }

    /// Kills `p` once its token holds committed bytes (so the kill is mid-way, not before the first checkpoint).
    static func killCommitted(_ p: RunningProcess, _ w: Workspace) async throws -> (
        id: String, committed: Set<Int>, stderr: String
    ) {
        var id: String?
        for _ in 0..<600 {
            id = try w.tokens().first
            if let id, !(try committedPieces(w, id)).isEmpty { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(p.isRunning)
        p.send(signal: SIGKILL)
        let stderr = try await p.wait().stderr
        let found = try #require(id)
        return (found, try committedPieces(w, found), stderr)
    }

    @Test func mirrorsWithPieceHashesThroughADeadMirrorACorruptOneAndTwoKills() async throws {
        let w = try Workspace()
        let (mirrors, bytes, corrupt) = try await Self.mirrors(w)
        let servers = mirrors.map(\.server)
        let meta = w.path("f.meta4")
        try Self.metalink(bytes, urls: mirrors.map(\.url)).write(toFile: meta, atomically: true, encoding: .utf8)
        // Killed at a quarter, the second mirror stopped at half, killed again at 60%, then to the end.
        var p = try w.start(["download", meta, "--connections", "6", "--json"])
        try await Self.waitFor(0.25, p)
        var runs: [(logged: [Int], committed: Set<Int>, stderr: String)] = []
        var (id, committed, stderr) = try await Self.killCommitted(p, w)
        runs.append((servers.map { $0.accessLog().count }, committed, stderr))
        p = try w.start(["resume", id, "--json"])
        try await Self.waitFor(0.5, p)
        mirrors[1].proxy.stop()
        servers[1].stop()
        try await Self.waitFor(0.6, p)
        (id, committed, stderr) = try await Self.killCommitted(p, w)
        runs.append((servers.map { $0.accessLog().count }, committed, stderr))
        let r = try await w.run(["resume", id, "--json"], timeout: .seconds(900))
        let ok = r.status == 0 && (try? sha256(file: w.out + "/f.bin")) == sha256(bytes)
        // A whole piece fetched again counts unless a kill came before the token held it: a kill loses at most
        // the last checkpoint interval's bytes, by design.
        var fetches: [Int: Int] = [:]
        for (s, server) in servers.enumerated() {
            let log = server.accessLog()
            let bounds = [0] + runs.map { $0.logged[s] } + [log.count]
            for k in 0..<bounds.count - 1 {
                for first in Self.wholePieces(Array(log[bounds[k]..<bounds[k + 1]]))
                where k == runs.count || runs[k].committed.contains(first) {
                    fetches[first, default: 0] += 1
                }
            }
        }
        let twice = fetches.filter { $0.value > 1 }.keys.sorted()
        let sent = Self.bodyBytes(servers)
        Self.row(
            "mirrors, pieces: dead+corrupt+2 kills", faults: 4, finished: r.status == 0,
            resent: max(0, sent - Self.mirrorSize), mismatch: r.status == 0 && !ok)
        print("soak | mirrors | pieces fetched whole twice: \(twice) (the corrupt one starts at \(corrupt))")
        #expect(ok, "\(r)")
        stderr = runs.map(\.stderr).joined() + r.stderr
        #expect(stderr.contains("mirror \(mirrors[0].url) dropped"), "\(stderr)")
        #expect(stderr.contains("mirror \(mirrors[1].url) dropped"), "\(stderr)")
        #expect(mirrors.allSatisfy { $0.proxy.connectionCount > 0 })
        #expect(twice.count < 2, "\(twice)")
    }

    @Test func mirrorsWithoutPieceHashesFindTheCorruptOne() async throws {
        let w = try Workspace()
        let (mirrors, bytes, _) = try await Self.mirrors(w)
        let servers = mirrors.map(\.server)
        let r = try await w.run(
            [
                "download", mirrors[0].url, "--mirror", mirrors[1].url, "--mirror", mirrors[2].url,
                "--checksum", "sha256=\(sha256(bytes))", "--connections", "6",
            ],
            timeout: .seconds(900))
        let ok = r.status == 0 && (try? sha256(file: w.out + "/f.bin")) == sha256(bytes)
        let sent = Self.bodyBytes(servers)
        Self.row(
            "mirrors, checksum only: corrupt", faults: 1, finished: r.status == 0,
            resent: max(0, sent - Self.mirrorSize), mismatch: r.status == 0 && !ok)
        #expect(ok, "\(r)")
        #expect(r.stderr.contains("mirror \(mirrors[0].url) dropped"), "\(r.stderr)")
    }
}
