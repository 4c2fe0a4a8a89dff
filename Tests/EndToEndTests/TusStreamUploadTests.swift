import Foundation
import Testing

/// `producer | resumectl upload - URL` to tuspyserver: created with `Upload-Defer-Length: 1`, the length
/// sent with the first PATCH after stdin ended; cuts through the proxy, a kill -9 before the end, the replay
/// rule. Serialized, as the other suites that start tuspyserver.
@Suite(.serialized) struct TusStreamUploadTests: StreamPipelines {
    /// The one upload the server holds.
    func stored(_ server: TusServer) throws -> String {
        let uploads = server.storedUploads()
        try #require(uploads.count == 1, "\(uploads)")
        return try sha256(file: server.files.path(uploads[0]))
    }

    @Test func aStreamThroughCutsArrivesWhole() async throws {
        let w = try Workspace()
        let server = try await TusServer()
        // Cuts until three were (a HEAD carries too little to be cut, whatever its place), then every connection
        // passes.
        let cuts: [Fault] = [
            .cutAfterUpstream(bytes: 3_000_000), .cutAfterUpstream(bytes: 2_000_000, reset: true),
            .cutAfterUpstream(bytes: 4_000_000),
        ]
        let plan: [Fault] = [.pass] + Array(repeating: cuts, count: 10).joined()
        let proxy = try FaultProxy(upstreamPort: server.port, plan: plan)
        let thirdCut = proxy.switchPlan(afterCuts: 3, to: [])
        defer { thirdCut.cancel() }
        let (r, code) = try await pipeline(
            w, producer: "head -c 24000000 /dev/urandom | tee >(sha256sum > \(w.path("sum")))",
            ["upload", "-", proxy.url(for: "files/"), "--retry-delay", "0.05", "--json"])
        #expect(code == 0, "\(r)")
        let sum = try String(contentsOfFile: w.path("sum"), encoding: .utf8)
        #expect(sum.hasPrefix(try stored(server)), "\(sum)")
        #expect(proxy.connections.filter(\.triggered).count >= 2, "\(proxy.connections)")
        // Every append went through the proxy (the upload URL follows the request's Host), about once.
        #expect(
            proxy.bytesUpstream >= 24_000_000 && proxy.bytesUpstream < 24_000_000 + 10_000_000, "\(proxy.bytesUpstream)"
        )
        #expect(names(events(r.stdout)).contains("retry"), "\(r.stdout)")
        #expect(events(r.stdout).first("completed")?["bytes"] as? Int == 24_000_000)
        #expect(try w.tokens().isEmpty && spoolFiles(w).isEmpty, "token and spool are gone")
    }

    @Test func killedBeforeTheEndTheSameStreamFinishesAndAnotherIs65() async throws {
        let w = try Workspace()
        let server = try await TusServer()
        let digest = try makeRandomFile(path: w.path("www/src.bin"), size: 30_000_000, seed: 52)
        _ = try makeRandomFile(path: w.path("www/other.bin"), size: 30_000_000, seed: 53)
        let id = try await killed(
            w, producer: "cat \(w.path("www/src.bin"))", url: server.endpoint, extra: ["--spool-max", "4M"]
        ) {
            $0["ended"] as? Bool == false && ($0["start"] as? Int ?? 0) > 0
        }
        let token = try w.token(id)["upload"] as? [String: Any]
        #expect(token?["protocol"] as? String == "tus", "\(String(describing: token))")
        let other = try await resume(w, id, stdin: contents(w.path("www/other.bin")))
        #expect(other.status == 65, "\(other)")
        #expect(other.stderr.contains("differs"), "\(other)")
        #expect(try w.tokens() == [id], "the token stays for the right stream")
        let r = try await resume(w, id, stdin: contents(w.path("www/src.bin")), timeout: .seconds(120))
        #expect(r.status == 0, "\(r)")
        #expect(try stored(server) == digest)
        #expect(try w.tokens().isEmpty && spoolFiles(w).isEmpty)
    }

    @Test func killedAfterTheEndItFinishesFromTheSpool() async throws {
        let w = try Workspace()
        let server = try await TusServer()
        let digest = try makeRandomFile(path: w.path("www/src.bin"), size: 12_000_000, seed: 54)
        let id = try await killed(w, producer: "cat \(w.path("www/src.bin"))", url: server.endpoint) {
            $0["ended"] as? Bool == true
        }
        let r = try await resume(w, id)
        #expect(r.status == 0, "\(r)")
        #expect(try stored(server) == digest)
        #expect(try w.tokens().isEmpty && spoolFiles(w).isEmpty)
    }
}
