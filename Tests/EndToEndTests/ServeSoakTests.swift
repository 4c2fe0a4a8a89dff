import Foundation
import Testing

/// The short `make soak-serve` (#47): `scripts/soak_serve.py` drives the built `serve` for a minute with
/// 20 resumable uploads at all times (draft through `resumectl`, tus through tuspy, plain PUTs; a fifth
/// cut at the script's proxy), 40 connections of ranged GETs and a HEAD observer, while `serve` is
/// killed with SIGKILL and restarted on the same port and folder twice. The script's table is in the
/// test's output; its JSON is checked here row by row.
@Suite struct ServeSoakTests {
    static let script = MotoServer.scripts.appendingPathComponent("soak_serve.py").path

    @Test func shortSoakOfTheFolderStore() async throws {
        let dir = try TempDirectory(prefix: "resumectl-soakserve")
        let json = dir.path("result.json")
        let r = try await runProcess(
            "python3",
            [
                Self.script, "--bin", resumectlBinary, "--store", "folder", "--duration", "60", "--uploads", "20",
                "--get-connections", "40", "--kill-interval", "25", "--max-size", "16M", "--pool", "8",
                "--get-file-size", "4M", "--drain", "25", "--workdir", dir.path, "--json", json,
            ],
            timeout: .seconds(240))
        print(r.stdout)
        // No result file: the script could not start a peer or failed; its stderr says why.
        let data = try #require(FileManager.default.contents(atPath: json), "\(r)")
        let result = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        func int(_ key: String) -> Int? { result[key] as? Int }

        #expect(int("acknowledged_then_lost_bytes") == 0, "lost: \(result["lost_uploads"] ?? "")")
        #expect(int("sha256_differs") == 0, "differ: \(result["differing"] ?? "")")
        let rss = try #require(result["peak_rss_mib"] as? Double)
        #expect(rss > 0 && rss <= 128, "peak RSS \(rss) MiB")
        let idle = try #require(result["idle_fds"] as? [String: Int])
        let after = try #require(result["fds_after"] as? [String: Int])
        #expect(!idle.isEmpty && after == idle, "descriptors idle \(idle), after the run \(after)")

        // The run was what it claims: two kills, each of a live serve; uploads of every protocol
        // finished through the proxy, some of them cut there; GETs answered with the right bytes.
        #expect(int("kills") == 2 && int("kills_alive") == 2, "\(result["kill_log"] ?? "")")
        let byProtocol = try #require(result["uploads_finished_by_protocol"] as? [String: Int])
        #expect(["ietf", "tus", "plain"].allSatisfy { (byProtocol[$0] ?? 0) > 0 }, "\(byProtocol)")
        #expect((int("uploads_cut") ?? 0) > 0)
        #expect(int("uploads_failed") == 0 && int("uploads_unfinished") == 0, "\(result["failures"] ?? "")")
        #expect(int("get_mismatches") == 0 && (int("get_count") ?? 0) > 0)
        #expect(r.status == 0, "\(r)")
    }
}
