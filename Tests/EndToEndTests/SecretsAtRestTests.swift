import Foundation
import Testing

/// No secret at rest: a URL's password (`http://alice:pass123@host/…`) and the values of credential headers
/// (`X-Api-Key`, `Authorization`, `Cookie`) reach no file under the state folder (tokens, results, logs,
/// live status), no `--json` event and no `log`, for every protocol. The token keeps the user name and the
/// headers' names; a resume without such a header says which to give again, one without the password asks
/// for it (or refuses without a terminal).
@Suite struct SecretsAtRestTests {
    static let headers = [
        "-H", "X-Api-Key: KEY123", "-H", "Authorization: Bearer TOK123", "-H", "Cookie: ck=SEC123", "-H", "X-Trace: 7",
    ]
    static let secrets = ["pass123", "KEY123", "TOK123", "SEC123"]
    /// 2 MB take 50 s at this rate: the pause comes long before the end even when a loaded machine starves
    /// the test for tens of seconds (CI once was: at 400k every transfer had ended before its pause).
    static let slow = "40k"

    /// `http://host/…` → `http://alice:pass123@host/…`
    static func login(_ url: String) -> String { url.replacingOccurrences(of: "://", with: "://alice:pass123@") }

    /// One transfer's life: detached with `--json`, paused while slow, resumed in the foreground with `-u` but
    /// without the credential headers (and without the `--limit-rate`, which no token keeps); the state folder,
    /// every output and `log` searched for `secrets` after each step.
    /// - Returns: the token's JSON as the pause left it.
    @discardableResult
    func transfer(
        _ args: [String], withheld: [String], secrets: [String] = Self.secrets, env: [String: String]? = nil,
        home: Workspace? = nil
    ) async throws -> [String: Any] {
        let w = try home ?? Workspace()
        let reaper = Reaper(w)
        defer { reaper.stopAll() }
        func run(_ a: [String]) async throws -> ProcessResult {
            guard let env else { return try await w.run(a) }
            return try await runProcess(
                resumectlBinary, a + ["--state-dir", w.state], environment: env, inheritEnvironment: false,
                currentDirectory: w.out, timeout: .seconds(120))
        }
        var seen: [String] = []
        let started = try await run(args + ["--json", "--detach", "--checkpoint-interval", "0.2"])
        seen += [started.stdout, started.stderr]
        #expect(started.status == 0, "\(started)")
        let id = try #require(started.stdoutLines.last)
        try await Task.sleep(for: .milliseconds(1500))
        let paused = try await run(["pause", id])
        #expect(paused.status == 0, "\(paused)")
        let waited = try await run(["wait", id])
        #expect(waited.status == 75, "\(waited)")
        seen += [paused.stdout, paused.stderr, waited.stdout, waited.stderr]
        let token = try w.token(id)
        let file = try String(contentsOfFile: w.state + "/tokens/\(id).json", encoding: .utf8)
        #expect((token["withheldHeaders"] as? [String]).map(Set.init) == Set(withheld), "\(file)")
        #expect((token["headers"] as? [String])?.contains("X-Trace: 7") == true, "\(file)")
        expectNothingHolds(secrets, w, seen)

        // The headers are not given again: one line names them. The login is (-u), so Authorization is not missing.
        let resumed = try await run(["resume", id, "--json", "-u", "alice:pass123"])
        #expect(resumed.status == 0, "\(resumed)")
        let named = withheld.filter { $0 != "Authorization" }
        let warning = resumed.stderr.split(separator: "\n").filter { $0.contains("never stored") }
        #expect(warning.count == 1 && named.allSatisfy { warning[0].contains("-H '\($0): VALUE'") }, "\(resumed)")
        let log = try await run(["log", id])
        // The log holds the detached run's NDJSON events and its stderr lines.
        let logged = events(log.stdout.split(separator: "\n").filter { $0.hasPrefix("{") }.joined(separator: "\n"))
        #expect(log.status == 0 && names(logged).contains("started"), "\(log)")
        seen += [resumed.stdout, resumed.stderr, log.stdout, log.stderr]
        expectNothingHolds(secrets, w, seen)
        return token
    }

    /// Neither a file under the state folder nor any of `texts` holds any of `secrets`.
    func expectNothingHolds(
        _ secrets: [String], _ w: Workspace, _ texts: [String], sourceLocation: SourceLocation = #_sourceLocation
    ) {
        var files = 0
        let walker = FileManager.default.enumerator(atPath: w.state)
        while let name = walker?.nextObject() as? String {
            guard let data = FileManager.default.contents(atPath: w.state + "/" + name) else { continue }
            files += 1
            let text = String(decoding: data, as: UTF8.self)
            for secret in secrets where text.contains(secret) {
                Issue.record("\(name) holds \(secret): \(text.prefix(2000))", sourceLocation: sourceLocation)
            }
        }
        #expect(files > 0, sourceLocation: sourceLocation)
        for text in texts {
            for secret in secrets where text.contains(secret) {
                Issue.record("an output holds \(secret): \(text.prefix(2000))", sourceLocation: sourceLocation)
            }
        }
    }

    @Test func download() async throws {
        let w = try Workspace()
        let digest = try makeRandomFile(path: w.path("www/f.bin"), size: 2_000_000, seed: 71)
        let nginx = try await NginxServer(root: w.path("www"))
        let url = Self.login(nginx.url(for: "f.bin"))
        let token = try await transfer(
            ["download", url, "-o", "f.bin", "--limit-rate", Self.slow] + Self.headers,
            withheld: ["X-Api-Key", "Authorization", "Cookie"], home: w)
        #expect(token["url"] as? String == nginx.url(for: "f.bin").replacingOccurrences(of: "://", with: "://alice@"))
        #expect(try sha256(file: w.out + "/f.bin") == digest)
    }

    /// A token whose URL names a user keeps no password: without `-u`, netrc or a terminal, resume says so and stops.
    @Test func resumeWithoutThePasswordSaysHowToGiveIt() async throws {
        let w = try Workspace()
        try makeRandomFile(path: w.path("www/f.bin"), size: 2_000_000, seed: 72)
        let nginx = try await NginxServer(root: w.path("www"), limitRate: 40_000)
        let reaper = Reaper(w)
        defer { reaper.stopAll() }
        let started = try await w.run(["download", Self.login(nginx.url(for: "f.bin")), "-o", "f.bin", "--detach"])
        let id = try #require(started.stdoutLines.last, "\(started)")
        try await Task.sleep(for: .milliseconds(500))
        #expect(try await w.run(["pause", id]).status == 0)
        #expect(try await w.run(["wait", id]).status == 75)
        let resumed = try await w.run(["resume", id])
        #expect(resumed.status == 64, "\(resumed)")
        #expect(resumed.stderr.contains("user 'alice'") && resumed.stderr.contains("-u alice:PASSWORD"), "\(resumed)")
    }

    @Test func ietfUploadToServe() async throws {
        try await InProcessServe.with { served in
            let w = try Workspace()
            try makeRandomFile(path: w.path("www/src.bin"), size: 2_000_000, seed: 73)
            try await transfer(
                [
                    "upload", w.path("www/src.bin"), Self.login(served.url + "/ietf.bin"), "--protocol", "ietf",
                    "--limit-rate", Self.slow,
                ] + Self.headers, withheld: ["X-Api-Key", "Authorization", "Cookie"], home: w)
        }
    }

    @Test func plainUploadToServe() async throws {
        try await InProcessServe.with { served in
            let w = try Workspace()
            try makeRandomFile(path: w.path("www/src.bin"), size: 2_000_000, seed: 74)
            try await transfer(
                [
                    "upload", w.path("www/src.bin"), Self.login(served.url + "/plain.bin"), "--protocol", "plain",
                    "--limit-rate", Self.slow,
                ] + Self.headers, withheld: ["X-Api-Key", "Authorization", "Cookie"], home: w)
        }
    }

    @Test func tusUpload() async throws {
        let server = try await TusServer()
        let w = try Workspace()
        try makeRandomFile(path: w.path("www/src.bin"), size: 2_000_000, seed: 75)
        try await transfer(
            [
                "upload", w.path("www/src.bin"), Self.login(server.endpoint), "--protocol", "tus", "--chunk-size",
                "256k",
                "--limit-rate", Self.slow,
            ] + Self.headers, withheld: ["X-Api-Key", "Authorization", "Cookie"], home: w)
    }

    /// S3 signs with keys from the environment; a `-H` credential header is withheld as for any URL.
    @Test func s3Upload() async throws {
        let s = try await S3Scene()
        try makeRandomFile(path: s.w.path("www/src.bin"), size: 12 << 20, seed: 76)
        try await transfer(
            [
                "upload", s.w.path("www/src.bin"), s.url("s.bin"), "--endpoint-url", s.moto.endpoint, "--part-size",
                "5M",
                "--limit-rate", "256k", "-H", "X-Api-Key: KEY123", "-H", "X-Trace: 7",
            ],
            withheld: ["X-Api-Key"], secrets: ["KEY123", s.moto.secretKey], env: s.moto.environment(home: s.home),
            home: s.w)
    }
}
