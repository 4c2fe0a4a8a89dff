import Foundation
import ResumeServer
import Testing

/// `resumectl serve --htpasswd`: Basic logins checked against entries written by Apache's
/// `htpasswd -B` (bcrypt) and `openssl passwd -5/-6` (SHA-crypt), `--public-read`, what the log says
/// (never a password), the slow-down after repeated failures, and the refusal to start beyond
/// loopback without a login.
@Suite("serve logins")
struct ServeLoginTests {
    /// A password file with one bcrypt and two SHA-crypt users, made by the tools users use.
    static func passwordFile(_ w: Workspace) async throws -> String {
        let path = w.path("htpasswd")
        let bcrypt = try await runProcess("htpasswd", ["-B", "-b", "-c", path, "alice", "bcrypt secret"])
        try #require(bcrypt.status == 0, "htpasswd (apache2-utils) is needed: \(bcrypt)")
        var text = try String(contentsOfFile: path, encoding: .utf8)
        for (user, flag, password) in [("bob", "-5", "sha256 secret"), ("carol", "-6", "sha512 secret")] {
            let hashed = try await runProcess("openssl", ["passwd", flag, password])
            try #require(hashed.status == 0, "\(hashed)")
            text += "\(user):\(hashed.stdout.trimmingCharacters(in: .whitespacesAndNewlines))\n"
        }
        try ("# team logins\n\n" + text).write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test(
        "401 without a login or with a wrong one; bcrypt and SHA-crypt logins pass; an anonymous upload stores nothing")
    func logins() async throws {
        let w = try Workspace()
        let htpasswd = try await Self.passwordFile(w)
        let digest = try makeRandomFile(path: w.path("www/up.bin"), size: 1_000_000, seed: 10)
        try await InProcessServe.with({ $0.htpasswd = htpasswd }) { served in
            try Data("hello".utf8).write(to: URL(fileURLWithPath: served.path("hello.txt")))

            let anonymous = try await CurlExchange.run([served.url + "/hello.txt"])
            #expect(anonymous.status == 401)
            #expect(anonymous["www-authenticate"]?.hasPrefix("Basic realm=\"resumectl\"") == true, "\(anonymous.heads)")

            let wrong = try await CurlExchange.run(["-u", "alice:not it", served.url + "/hello.txt"])
            #expect(wrong.status == 401)
            let unknown = try await CurlExchange.run(["-u", "mallory:bcrypt secret", served.url + "/hello.txt"])
            #expect(unknown.status == 401)

            for login in ["alice:bcrypt secret", "bob:sha256 secret", "carol:sha512 secret"] {
                let ok = try await CurlExchange.run(["-u", login, served.url + "/hello.txt"])
                #expect(ok.status == 200, "\(login)")
                #expect(ok.body == Data("hello".utf8))
            }

            let upload = try await CurlExchange.run(["-T", w.path("www/up.bin"), served.url + "/anon.bin"])
            #expect(upload.status == 401)
            let draft = try await CurlExchange.run(
                [
                    "-H", "Expect:", "-H", "Upload-Draft-Interop-Version: 6", "-H", "Upload-Complete: ?1", "-X", "POST",
                    "-T", w.path("www/up.bin"), served.url + "/anon-draft.bin",
                ])
            #expect(draft.status == 401)
            #expect(!draft.interim.contains { $0.status == 104 })
            // Nothing but the file that was there (and serve's hidden, empty store of unfinished uploads).
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: served.folder.path).sorted() == [
                    ".resumectl-uploads", "hello.txt",
                ])
            #expect(try FileManager.default.contentsOfDirectory(atPath: served.path(".resumectl-uploads")).isEmpty)

            let withLogin = try await CurlExchange.run([
                "-u", "carol:sha512 secret", "-T", w.path("www/up.bin"), served.url + "/up.bin",
            ])
            #expect(withLogin.status == 201)
            #expect(try sha256(file: served.path("up.bin")) == digest)

            // The log: the failures with user and address, no password, no Authorization value.
            let log = served.log.joined(separator: "\n")
            #expect(log.contains("login failed for user \"alice\" from 127.0.0.1"), "\(log)")
            #expect(log.contains("login failed for user \"mallory\" from 127.0.0.1"), "\(log)")
            for secret in [
                "secret", "not it", "Authorization", "authorization", "Basic ",
                Data("alice:not it".utf8).base64EncodedString(),
            ] {
                #expect(!log.contains(secret), "\(secret) in the log")
            }
        }
    }

    @Test("the built resumectl uploads with a login from --netrc-file")
    func resumectlUploadWithLogin() async throws {
        let w = try Workspace()
        let htpasswd = try await Self.passwordFile(w)
        let digest = try makeRandomFile(path: w.path("www/src.bin"), size: 2_000_000, seed: 11)
        try await InProcessServe.with({ $0.htpasswd = htpasswd }) { served in
            try "machine 127.0.0.1 login bob password \"sha256 secret\"\n".write(
                toFile: w.path("netrc"), atomically: true, encoding: .utf8)
            let r = try await w.run([
                "upload", w.path("www/src.bin"), served.url + "/src.bin", "--netrc-file", w.path("netrc"),
            ])
            #expect(r.status == 0, "\(r)")
            #expect(try sha256(file: served.path("src.bin")) == digest)
        }
    }

    @Test("--public-read: downloads without a login, uploads still need one")
    func publicRead() async throws {
        let w = try Workspace()
        let htpasswd = try await Self.passwordFile(w)
        try await InProcessServe.with({
            $0.htpasswd = htpasswd; $0.publicRead = true
        }) { served in
            try Data("hello".utf8).write(to: URL(fileURLWithPath: served.path("hello.txt")))
            let get = try await CurlExchange.run([served.url + "/hello.txt"])
            #expect(get.status == 200)
            #expect(get.body == Data("hello".utf8))
            let put = try await CurlExchange.run(["--data-binary", "x", "-X", "PUT", served.url + "/new.txt"])
            #expect(put.status == 401)
            #expect(!FileManager.default.fileExists(atPath: served.path("new.txt")))
        }
    }

    @Test("repeated failures from one address get 429 with Retry-After, even with the right password")
    func throttled() async throws {
        let w = try Workspace()
        let htpasswd = try await Self.passwordFile(w)
        try await InProcessServe.with({ $0.htpasswd = htpasswd }) { served in
            for attempt in 0..<5 {
                let wrong = try await CurlExchange.run(["-u", "alice:guess \(attempt)", served.url + "/"])
                #expect(wrong.status == 401)
            }
            let slowed = try await CurlExchange.run(["-u", "alice:bcrypt secret", served.url + "/"])
            #expect(slowed.status == 429)
            let wait = try #require(slowed["retry-after"].flatMap { Int($0) })
            #expect(wait >= 1 && wait <= 60)
        }
    }

    @Test("a line in another format is refused at start, naming its line")
    func badLineRefused() async throws {
        let w = try Workspace()
        let path = w.path("htpasswd")
        let md5 = try await runProcess("openssl", ["passwd", "-apr1", "x"])
        let sha = try await runProcess("openssl", ["passwd", "-6", "y"])
        try
            ("# comment\nalice:\(sha.stdout.trimmingCharacters(in: .whitespacesAndNewlines))\n\n"
            + "bob:\(md5.stdout.trimmingCharacters(in: .whitespacesAndNewlines))\n")
            .write(toFile: path, atomically: true, encoding: .utf8)
        let error = await #expect(throws: ServeError.self) {
            var configuration = ServerConfiguration(directory: w.path("www"), port: 0)
            configuration.htpasswd = path
            _ = try await ResumeServer.start(configuration)
        }
        guard case .badPasswordFile(_, let line, _) = error else {
            Issue.record("\(String(describing: error))")
            return
        }
        #expect(line == 4)

        let r = try await runProcess(resumectlBinary, ["serve", w.path("www"), "--port", "0", "--htpasswd", path])
        #expect(r.status == 64, "\(r)")
        #expect(r.stderr.contains("line 4") && r.stderr.split(separator: "\n").count == 1, "\(r.stderr)")
    }

    @Test(
        """
        beyond loopback: no start without --htpasswd unless --read-only or --allow-anonymous-uploads; logins without \
        TLS warn
        """
    )
    func safeDefaultBeyondLoopback() async throws {
        let w = try Workspace()
        let refused = try await runProcess(
            resumectlBinary, ["serve", w.path("www"), "--host", "0.0.0.0", "--port", "0"])
        #expect(refused.status == 64, "\(refused)")
        #expect(
            refused.stderr.contains("--htpasswd") && refused.stderr.split(separator: "\n").count == 1,
            "\(refused.stderr)")
        #expect(!refused.stdout.contains("listening"))

        for extra in [["--read-only"], ["--allow-anonymous-uploads"]] {
            let serve = try RunningProcess(
                resumectlBinary, ["serve", w.path("www"), "--host", "0.0.0.0", "--port", "0"] + extra)
            let url = try await ServeProcess.listening(serve).url
            #expect(url.hasPrefix("http://0.0.0.0:"), "\(url)")
            serve.send(signal: SIGTERM)
            _ = try await serve.wait()
        }

        let htpasswd = try await Self.passwordFile(w)
        let serve = try RunningProcess(
            resumectlBinary, ["serve", w.path("www"), "--host", "0.0.0.0", "--port", "0", "--htpasswd", htpasswd])
        _ = try await ServeProcess.listening(serve)
        serve.send(signal: SIGTERM)
        let ended = try await serve.wait()
        #expect(ended.stderr.contains("warning: passwords cross the network in clear text"), "\(ended.stderr)")
    }
}
