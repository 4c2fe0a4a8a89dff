import Foundation
import Testing

@testable import ResumeServer

#if canImport(Glibc)
    import Glibc
#endif

/// The attacks an audit of `serve` found, each kept as a regression test against the server as a user runs
/// it: a write past the login gate by a method override, one login's upload reached by another, a body that
/// stalls for ever, user names told apart by timing, and log lines forged through a path.
@Suite("serve under attack")
struct ServeAttackTests {
    static let override = "X-HTTP-Method-Override"
    static let draft = ["-H", "Expect:", "-H", "Upload-Draft-Interop-Version: 6"]
    static let tus = ["-H", "Tus-Resumable: 1.0.0"]
    static let tusBody = ["-H", "Content-Type: application/offset+octet-stream"]

    @Test("--htpasswd --public-read: no override turns a PUT or a draft POST into a read the gate lets pass")
    func overrideIsOneMethod() async throws {
        let w = try Workspace()
        let htpasswd = try await ServeLoginTests.passwordFile(w)
        try await InProcessServe.with({
            $0.htpasswd = htpasswd; $0.publicRead = true
        }) { served in
            // Before: the gate read GET or HEAD and let it by, the handler wrote what the request line said (201).
            for (name, extra) in [
                ("get.txt", ["-H", "\(Self.override): GET"]),
                ("get-tus.txt", ["-H", "\(Self.override): GET"] + Self.tus),
            ] {
                let put = try await CurlExchange.run(
                    extra + ["-X", "PUT", "--data-binary", "owned", served.url + "/" + name])
                #expect(put.status == 401, "\(name): \(put.heads)")
            }
            // OPTIONS anywhere, and HEAD on a tus request, are honoured: the whole request is then that, for the
            // gate and every handler alike, and nothing is written. (curl waits for a PUT's body that a HEAD lacks.)
            let options = try await CurlExchange.run([
                "-H", "\(Self.override): OPTIONS", "-X", "PUT", "--data-binary", "owned",
                served.url + "/options.txt",
            ])
            #expect(options.status == 204, "\(options.heads)")
            let head = try await CurlExchange.run(
                ["-m", "3", "-H", "\(Self.override): HEAD"] + Self.tus
                    + ["-X", "PUT", "--data-binary", "owned", served.url + "/head.txt"])
            #expect(head.status == 404, "\(head.heads)")
            let draftPost = try await CurlExchange.run(
                Self.draft + [
                    "-H", "\(Self.override): GET", "-H", "Upload-Complete: ?1", "-X", "POST", "--data-binary", "owned",
                    served.url + "/draft.txt",
                ])
            #expect(draftPost.status == 401)
            #expect(!draftPost.interim.contains { $0.status == 104 })
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: served.folder.path).sorted() == [
                    ".resumectl-uploads"
                ])
            #expect(try FileManager.default.contentsOfDirectory(atPath: served.path(".resumectl-uploads")).isEmpty)
            // tus's override still works where tus needs it, with a login.
            let created = try await CurlExchange.run(
                ["-u", "alice:bcrypt secret"] + Self.tus
                    + ["-X", "POST", "-H", "Upload-Length: 5", served.url + "/ok/"] + [
                        "-H", "Upload-Metadata: filename b2suYmlu",
                    ])
            #expect(created.status == 201, "\(created.heads)")
            let url = served.url + (try #require(created["location"]))
            let patched = try await CurlExchange.run(
                ["-u", "alice:bcrypt secret"] + Self.tus + Self.tusBody
                    + [
                        "-X", "POST", "-H", "\(Self.override): PATCH", "-H", "Upload-Offset: 0", "--data-binary",
                        "hello", url,
                    ])
            #expect(patched.status == 204)
            #expect(try String(contentsOfFile: served.path("ok/ok.bin"), encoding: .utf8) == "hello")
        }
    }

    /// bob's requests on alice's upload at `url`: every one 404, as for an upload that does not exist.
    static func strangerFinds404(_ url: String, tus isTus: Bool) async throws {
        let bob = ["-u", "bob:sha256 secret"]
        let headers = isTus ? Self.tus : Self.draft
        let body = isTus ? Self.tusBody : ["-H", "Content-Type: application/partial-upload"]
        let head = try await CurlExchange.run(bob + headers + ["-I", url])
        #expect(head.status == 404, "HEAD \(url): \(head.heads)")
        #expect(head["upload-offset"] == nil)
        let patch = try await CurlExchange.run(
            bob + headers + body
                + ["-X", "PATCH", "-H", "Upload-Offset: 4", "-H", "Upload-Complete: ?0", "--data-binary", "evil", url])
        #expect(patch.status == 404, "PATCH \(url): \(patch.heads)")
        let delete = try await CurlExchange.run(bob + headers + ["-X", "DELETE", url])
        #expect(delete.status == 404, "DELETE \(url): \(delete.heads)")
    }

    /// alice's own upload answers her with what she sent.
    static func ownerSees(_ url: String, tus isTus: Bool, offset: Int) async throws {
        let head = try await CurlExchange.run(
            ["-u", "alice:bcrypt secret"] + (isTus ? Self.tus : Self.draft) + ["-I", url])
        #expect(head.status == (isTus ? 200 : 204), "\(head.heads)")
        #expect(head["upload-offset"] == "\(offset)")
    }

    @Test("an upload belongs to its login: another user's HEAD, PATCH and DELETE get 404, before and after a kill -9")
    func uploadsHaveOwners() async throws {
        let w = try Workspace()
        let htpasswd = try await ServeLoginTests.passwordFile(w)
        let folder = w.path("served")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        var (serve, port) = try await ServeProcess.start(folder: folder, ["--htpasswd", htpasswd])
        defer { serve.send(signal: SIGKILL) }

        let base = "http://127.0.0.1:\(port)"
        let alice = ["-u", "alice:bcrypt secret"]

        let tus = try await CurlExchange.run(
            alice + Self.tus + Self.tusBody
                + ["-X", "POST", "-H", "Upload-Length: 10", "--data-binary", "abcd", base + "/t.bin"])
        #expect(tus.status == 201, "\(tus.heads)")
        let tusURL = base + (try #require(tus["location"]))
        let draft = try await CurlExchange.run(
            alice + Self.draft
                + [
                    "-X", "POST", "-H", "Upload-Complete: ?0", "-H", "Upload-Length: 10", "--data-binary", "abcd",
                    base + "/d.bin",
                ])
        #expect(draft.status == 201, "\(draft.heads)")
        let draftURL = base + (try #require(draft["location"]))

        for round in 0..<2 {
            try await Self.strangerFinds404(tusURL, tus: true)
            try await Self.strangerFinds404(draftURL, tus: false)
            try await Self.ownerSees(tusURL, tus: true, offset: 4)
            try await Self.ownerSees(draftURL, tus: false, offset: 4)
            if round == 0 {
                _ = try await ServeDurabilityTests.killAndRestart(
                    &serve, folder: folder, port: port, ["--htpasswd", htpasswd])
            }
        }
        // The owner finishes both; the files hold only her bytes.
        let tusEnd = try await CurlExchange.run(
            alice + Self.tus + Self.tusBody
                + ["-X", "PATCH", "-H", "Upload-Offset: 4", "--data-binary", "efghij", tusURL])
        #expect(tusEnd.status == 204)
        let draftEnd = try await CurlExchange.run(
            alice + Self.draft + [
                "-H", "Content-Type: application/partial-upload",
                "-X", "PATCH", "-H", "Upload-Offset: 4", "-H", "Upload-Complete: ?1", "--data-binary", "efghij",
                draftURL,
            ])
        #expect((200..<300).contains(draftEnd.status), "\(draftEnd.heads)")
        #expect(try String(contentsOfFile: folder + "/t.bin", encoding: .utf8) == "abcdefghij")
        #expect(try String(contentsOfFile: folder + "/d.bin", encoding: .utf8) == "abcdefghij")
    }

    @Test("S3 store: another user's requests on an upload get 404, also on a restarted instance")
    func s3UploadsHaveOwners() async throws {
        let w = try Workspace()
        let htpasswd = try await ServeLoginTests.passwordFile(w)
        let cluster = try await S3ServeCluster(instances: 1, extra: ServeS3AccessTests.lock + ["--htpasswd", htpasswd])
        let base = "http://127.0.0.1:\(cluster.ports[0])"
        let tus = try await CurlExchange.run(
            ["-u", "alice:bcrypt secret"] + Self.tus + Self.tusBody
                + ["-X", "POST", "-H", "Upload-Length: 10", "--data-binary", "abcd", base + "/t.bin"])
        #expect(tus.status == 201, "\(tus.heads)")
        let tusURL = base + (try #require(tus["location"]))
        try await Self.strangerFinds404(tusURL, tus: true)
        try await cluster.restart(0, extra: ServeS3AccessTests.lock + ["--htpasswd", htpasswd])
        try await Self.strangerFinds404(tusURL, tus: true)
        try await Self.ownerSees(tusURL, tus: true, offset: 4)
    }

    @Test(
        """
        --body-timeout: a body that stalls is ended and its connection closed, what arrived stays; a slow steady one \
        is not
        """
    )
    func bodyTimeout() async throws {
        try await InProcessServe.with({ $0.bodyTimeout = .seconds(1) }) { served in
            // Before: nothing but the client ended such a connection.
            let stalled = try await RawHTTP.exchangeOffPool(
                port: served.port,
                "PUT /stall.bin HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789", wait: .seconds(15))
            #expect(stalled.closed, "\(stalled)")

            let draft = try await RawHTTP.exchangeOffPool(
                port: served.port,
                "POST /d.bin HTTP/1.1\r\nHost: x\r\nUpload-Draft-Interop-Version: 6\r\nUpload-Complete: ?1\r\n"
                    + "Content-Length: 100\r\n\r\n" + String(repeating: "d", count: 40), wait: .seconds(15))
            #expect(draft.closed, "\(draft)")
            let location = try #require(
                draft.0.split(separator: "\r\n").first { $0.lowercased().hasPrefix("location:") })
            let url = served.url + location.dropFirst("location:".count).trimmingCharacters(in: .whitespaces)
            let offset = try await CurlExchange.run(Self.draft + ["-I", url])
            #expect(offset["upload-offset"] == "40", "\(offset.heads)")

            // One byte every 0.4 s keeps a 1 s limit from firing.
            let steady = try await RawHTTP.offPool { () throws -> (String, closed: Bool) in
                let fd = try SocketFD.connect(port: served.port)
                defer { close(fd) }
                func put(_ text: String) {
                    _ = Array(text.utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                }
                put("PUT /steady.bin HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n")
                for byte in "12345" {
                    usleep(400_000)
                    put(String(byte))
                }
                return RawHTTP.read(fd, until: ContinuousClock.now + .seconds(3))
            }
            #expect(steady.0.hasPrefix("HTTP/1.1 201"), "\(steady)")
            #expect(try String(contentsOfFile: served.path("steady.bin"), encoding: .utf8) == "12345")

            let metrics = try await CurlExchange.run([served.url + "/.resumectl/metrics"])
            #expect(String(decoding: metrics.body, as: UTF8.self).contains("resumectl_body_timeouts_total 2"))
            #expect(served.log.filter { $0.contains("--body-timeout") }.count == 2, "\(served.log)")
        }
    }

    @Test("an unknown user is checked against the file's costliest entry, so timing tells no names")
    func decoyIsTheCostliestEntry() throws {
        let sha256 = "$5$saltsalt$" + String(repeating: "a", count: 43)
        let sha512 = "$6$rounds=9000$saltsalt$" + String(repeating: "b", count: 86)
        let bcrypt = "$2y$12$" + String(repeating: "c", count: 53)
        #expect(PasswordFile(hashes: ["a": sha256, "b": sha512]).decoy == sha512)
        #expect(PasswordFile(hashes: ["a": sha256, "b": sha512, "c": bcrypt]).decoy == bcrypt)
        #expect(PasswordFile(hashes: ["a": "$6$s$" + String(repeating: "d", count: 86), "b": sha512]).decoy == sha512)
        #expect(PasswordFile.cost("$2y$05$x") < PasswordFile.cost("$2b$10$x"))
    }

    @Test("a path with %0A forges no log line: every line escapes control characters")
    func logLinesEscaped() async throws {
        #expect(LogLine.escaped("GET /a 200") == "GET /a 200")
        #expect(LogLine.escaped("hook for /x\nGET /forged 200") == "hook for /x\\x0AGET /forged 200")
        #expect(LogLine.escaped("a\u{1B}[31m\u{85}\u{2028}é") == "a\\x1B[31m\\x85\\u{2028}é")
        try await InProcessServe.with({ $0.completionHook = CompletionHookSettings(command: ["false"]) }) { served in
            let put = try await CurlExchange.run([
                "-X", "PUT", "--data-binary", "x", served.url + "/a%0AGET%20%2Fforged%20200",
            ])
            #expect(put.status == 201)
            try await eventually(timeout: .seconds(20)) { served.log.contains { $0.hasPrefix("hook for ") } }
            #expect(!served.log.contains { $0.hasPrefix("GET /forged") }, "\(served.log)")
            #expect(served.log.contains { $0.contains("a\\x0AGET /forged 200") }, "\(served.log)")
        }
    }
}
