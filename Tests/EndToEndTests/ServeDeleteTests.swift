import Foundation
import Testing

/// `DELETE` of a plain file on `serve` (what `resumectl sync --delete` sends): only with `--overwrite`, behind
/// `--htpasswd` like an upload, never under `--read-only`, never a folder, a link, a hidden name or a path that
/// leaves the folder.
@Suite struct ServeDeleteTests {
    static func delete(_ url: String, _ extra: [String] = []) async throws -> CurlExchange {
        try await CurlExchange.run(["-X", "DELETE"] + extra + [url])
    }

    @Test func aPlainFileGoesAndNothingElseDoes() async throws {
        try await InProcessServe.with({ $0.overwrite = true }) { served in
            let fm = FileManager.default
            try fm.createDirectory(atPath: served.path("d/sub"), withIntermediateDirectories: true)
            _ = try makeRandomFile(path: served.path("d/a b.bin"), size: 1_000, seed: 1)
            _ = try makeRandomFile(path: served.path("d/.hidden"), size: 10, seed: 2)
            _ = try makeRandomFile(path: served.path("outside.bin"), size: 10, seed: 3)
            try fm.createSymbolicLink(atPath: served.path("d/link"), withDestinationPath: served.path("outside.bin"))

            let gone = try await Self.delete(served.url + "/d/a%20b.bin")
            #expect(gone.status == 200, "\(gone.heads)")
            #expect(!fm.fileExists(atPath: served.path("d/a b.bin")))
            let again = try await Self.delete(served.url + "/d/a%20b.bin")
            #expect(again.status == 404)

            #expect(try await Self.delete(served.url + "/d/sub").status == 403, "a folder stays")
            #expect(try await Self.delete(served.url + "/d/link").status == 403, "a link stays")
            #expect(fm.fileExists(atPath: served.path("outside.bin")))
            #expect(try await Self.delete(served.url + "/d/.hidden").status == 404, "hidden names are never there")
            #expect(fm.fileExists(atPath: served.path("d/.hidden")))
            let escape = try await Self.delete(served.url + "/d/%2E%2E/outside.bin", ["--path-as-is"])
            #expect(escape.status == 403, "\(escape.heads)")
            #expect(fm.fileExists(atPath: served.path("outside.bin")) && fm.fileExists(atPath: served.path("d/sub")))
        }
    }

    @Test func withoutOverwriteOrUnderReadOnlyNothingGoes() async throws {
        try await InProcessServe.with { served in
            _ = try makeRandomFile(path: served.path("keep.bin"), size: 100, seed: 4)
            let refused = try await Self.delete(served.url + "/keep.bin")
            #expect(refused.status == 403 && String(decoding: refused.body, as: UTF8.self).contains("--overwrite"))
            #expect(FileManager.default.fileExists(atPath: served.path("keep.bin")))
        }
        try await InProcessServe.with({
            $0.readOnly = true; $0.overwrite = true
        }) { served in
            _ = try makeRandomFile(path: served.path("keep.bin"), size: 100, seed: 4)
            let refused = try await Self.delete(served.url + "/keep.bin")
            #expect(refused.status == 405 && refused["allow"] == "GET, HEAD", "\(refused.heads)")
            #expect(FileManager.default.fileExists(atPath: served.path("keep.bin")))
        }
    }

    @Test func aLoginIsNeededWithHtpasswd() async throws {
        let w = try Workspace()
        let htpasswd = try await ServeLoginTests.passwordFile(w)
        try await InProcessServe.with({
            $0.htpasswd = htpasswd; $0.overwrite = true; $0.publicRead = true
        }) {
            served in
            _ = try makeRandomFile(path: served.path("f.bin"), size: 100, seed: 5)
            #expect(try await Self.delete(served.url + "/f.bin").status == 401, "public reads are no public deletes")
            #expect(try await Self.delete(served.url + "/f.bin", ["-u", "alice:wrong"]).status == 401)
            #expect(FileManager.default.fileExists(atPath: served.path("f.bin")))
            #expect(try await Self.delete(served.url + "/f.bin", ["-u", "alice:bcrypt secret"]).status == 200)
            #expect(!FileManager.default.fileExists(atPath: served.path("f.bin")))
        }
    }
}
