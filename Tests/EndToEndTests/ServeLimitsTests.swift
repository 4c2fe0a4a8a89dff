import Foundation
import Testing

/// `resumectl serve`'s limits and its refusal to overwrite: each refusal comes before anything is
/// stored, and leaves nothing behind (no file at the path, no temporary file).
@Suite("serve limits")
struct ServeLimitsTests {
    static let draft = ["-H", "Expect:", "-H", "Upload-Draft-Interop-Version: 6"]

    /// Data of unfinished uploads anywhere below `folder`.
    static func leftovers(_ folder: String) -> [String] {
        serveUploadLeftovers(folder)
    }

    @Test("an upload to an existing file is 409 and the file stays; --overwrite replaces it")
    func noSilentOverwrite() async throws {
        let w = try Workspace()
        let digest = try makeRandomFile(path: w.path("www/new.bin"), size: 1_000_000, seed: 3)
        try await InProcessServe.with { served in
            try Data("old".utf8).write(to: URL(fileURLWithPath: served.path("kept.bin")))
            let put = try await CurlExchange.run(["-T", w.path("www/new.bin"), served.url + "/kept.bin"])
            #expect(put.status == 409)
            let draft = try await CurlExchange.run(
                Self.draft + [
                    "-H", "Upload-Complete: ?1", "-X", "POST", "-T", w.path("www/new.bin"), served.url + "/kept.bin",
                ])
            #expect(draft.status == 409)
            #expect(!draft.interim.contains { $0.status == 104 }, "refused before resumption was promised")
            #expect(try Data(contentsOf: URL(fileURLWithPath: served.path("kept.bin"))) == Data("old".utf8))
            #expect(Self.leftovers(served.folder.path).isEmpty)
        }
        try await InProcessServe.with({ $0.overwrite = true }) { served in
            try Data("old".utf8).write(to: URL(fileURLWithPath: served.path("kept.bin")))
            let put = try await CurlExchange.run(["-T", w.path("www/new.bin"), served.url + "/kept.bin"])
            #expect(put.status == 201)
            #expect(try sha256(file: served.path("kept.bin")) == digest)
        }
    }

    @Test(
        """
        --max-upload-size: 413 for a sized, a chunked and an IETF upload, nothing kept; IETF clients are told the \
        limit
        """
    )
    func maxUploadSize() async throws {
        let w = try Workspace()
        _ = try makeRandomFile(path: w.path("www/big.bin"), size: 3_000_000, seed: 4)
        let smallDigest = try makeRandomFile(path: w.path("www/small.bin"), size: 500_000, seed: 5)
        try await InProcessServe.with({ $0.maxUploadSize = 1_000_000 }) { served in
            let sized = try await CurlExchange.run(["-T", w.path("www/big.bin"), served.url + "/sized.bin"])
            #expect(sized.status == 413)

            // No length announced: cut off once a million bytes have passed.
            let chunked = try await CurlExchange.run(
                ["-H", "Transfer-Encoding: chunked", "-T", w.path("www/big.bin"), served.url + "/chunked.bin"])
            #expect(chunked.status == 413 || chunked.exit != 0, "\(chunked.status) \(chunked.exit)")

            let draft = try await CurlExchange.run(
                Self.draft + [
                    "-H", "Upload-Complete: ?1", "-X", "POST", "-T", w.path("www/big.bin"), served.url + "/draft.bin",
                ])
            #expect(draft.status == 413)
            #expect(draft["upload-limit"] == "max-size=1000000")
            #expect(!draft.interim.contains { $0.status == 104 })

            for name in ["sized.bin", "chunked.bin", "draft.bin"] {
                #expect(!FileManager.default.fileExists(atPath: served.path(name)), "\(name)")
            }
            try await eventually(timeout: .seconds(10)) { Self.leftovers(served.folder.path).isEmpty }

            // Within the limit: accepted, and the 104 names the limit.
            let small = try await CurlExchange.run(
                Self.draft + [
                    "-H", "Upload-Complete: ?1", "-X", "POST", "-T", w.path("www/small.bin"), served.url + "/small.bin",
                ])
            #expect(small.status == 201)
            #expect(small.interim.first { $0.status == 104 }?["upload-limit"] == "max-size=1000000")
            #expect(try sha256(file: served.path("small.bin")) == smallDigest)
        }
    }

    @Test("an upload the free space cannot hold is 507, with nothing at its path")
    func insufficientStorage() async throws {
        try await InProcessServe.with { served in
            // A petabyte: more than any disk this runs on has free.
            let (answer, _) = try await RawHTTP.exchangeOffPool(
                port: served.port,
                "PUT /huge.bin HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000000000\r\n\r\nsome bytes"
            )
            #expect(answer.hasPrefix("HTTP/1.1 507"), "\(answer)")
            #expect(!FileManager.default.fileExists(atPath: served.path("huge.bin")))
            #expect(Self.leftovers(served.folder.path).isEmpty)
        }
    }

    @Test("a disk that fills up midway: 507, nothing kept (the space comes back), nothing at the path")
    func diskFullMidway() async throws {
        let w = try Workspace()
        let folder = try w.dir.subdirectory("small")
        _ = try makeRandomFile(path: w.path("www/six.bin"), size: 6_000_000, seed: 16)
        let threeDigest = try makeRandomFile(path: w.path("www/three.bin"), size: 3_000_000, seed: 17)
        // A 4 MiB file system of serve's own: a user and mount namespace (unshare, util-linux) lets
        // it mount a tmpfs without privileges; the network is shared, so the port is reachable.
        let serve = try RunningProcess(
            "/usr/bin/unshare",
            [
                "-rm", "sh", "-c", "mount -t tmpfs -o size=4m tmpfs \"$0\" && exec \"$1\" serve \"$0\" --port 0",
                folder, resumectlBinary,
            ])
        defer { serve.send(signal: SIGTERM) }
        let url = try await ServeProcess.listening(serve).url

        // No length announced, so only the disk can say no.
        let full = try await CurlExchange.run([
            "-H", "Transfer-Encoding: chunked", "-T", w.path("www/six.bin"), url + "/six.bin",
        ])
        #expect(full.status == 507, "\(full.status) \(full.exit) \(serve.stderrSoFar)")
        #expect(try await CurlExchange.run([url + "/six.bin"]).status == 404)
        // 3 MB fit in 4 MiB only if the 4 MiB the first upload had written were given back.
        try await Task.sleep(for: .milliseconds(200))
        let fits = try await CurlExchange.run(["-T", w.path("www/three.bin"), url + "/three.bin"])
        #expect(fits.status == 201, "\(serve.stderrSoFar)")
        let back = try await CurlExchange.run([url + "/three.bin"])
        #expect(sha256(back.body) == threeDigest)
    }

    @Test("--max-uploads: one more upload than allowed is 503 with Retry-After; a free slot takes the next")
    func maxUploads() async throws {
        let w = try Workspace()
        let digest = try makeRandomFile(path: w.path("www/f.bin"), size: 2_000_000, seed: 6)
        try await InProcessServe.with({ $0.maxUploads = 1 }) { served in
            async let slow = CurlExchange.run([
                "--limit-rate", "100K", "-T", w.path("www/f.bin"), served.url + "/slow.bin",
            ])
            try await eventually(timeout: .seconds(30)) { Self.leftovers(served.folder.path).count == 1 }
            let refused = try await CurlExchange.run(["-T", w.path("www/f.bin"), served.url + "/second.bin"])
            #expect(refused.status == 503)
            #expect(refused["retry-after"].flatMap { Int($0) } != nil)
            #expect(!FileManager.default.fileExists(atPath: served.path("second.bin")))
            #expect(try await slow.status == 201)
            let after = try await CurlExchange.run(["-T", w.path("www/f.bin"), served.url + "/second.bin"])
            #expect(after.status == 201)
            #expect(try sha256(file: served.path("second.bin")) == digest)
        }
    }

    @Test("a head sent a byte a second is dropped after --header-timeout")
    func slowHeadIsDropped() async throws {
        try await InProcessServe.with({ $0.headerTimeout = .seconds(2) }) { served in
            let port = served.port
            let (answers, closed, elapsed) = try await RawHTTP.offPool { () throws -> ([String], Bool, Duration) in
                let fd = try SocketFD.connect(port: port)
                defer { close(fd) }
                let started = ContinuousClock.now
                var answers: [String] = []
                for byte in Array("GET / HTTP/1.1\r\nHost: slow\r\nX-Padding: aaaaaaaaaaaaaaaaaaaa\r\n".utf8) {
                    _ = withUnsafeBytes(of: byte) { send(fd, $0.baseAddress, 1, Int32(MSG_NOSIGNAL)) }
                    let (answer, gone) = RawHTTP.read(fd, until: ContinuousClock.now + .seconds(1))
                    answers.append(answer)
                    if gone { return (answers, true, ContinuousClock.now - started) }
                }
                return (answers, false, ContinuousClock.now - started)
            }
            let answered = answers.filter { !$0.isEmpty }
            #expect(answered.isEmpty, "no answer to a head that never ended: \(answered)")
            #expect(closed)
            #expect(elapsed >= .milliseconds(1900) && elapsed < .seconds(6), "\(elapsed)")
        }
    }

    @Test("a 70 KiB head gets 431 and the connection closes; the log says 431")
    func oversizedHead() async throws {
        try await InProcessServe.with { served in
            let padding = String(repeating: "a", count: 70 * 1024)
            let response = try await CurlExchange.run(["-H", "X-Padding: \(padding)", served.url + "/"])
            #expect(response.status == 431)
            let (answer, closed) = try await RawHTTP.exchangeOffPool(
                port: served.port,
                "GET / HTTP/1.1\r\nHost: x\r\nX-A: \(padding.prefix(40 * 1024))\r\nX-B: "
                    + "\(padding.prefix(30 * 1024))\r\n\r\n"
            )
            #expect(answer.hasPrefix("HTTP/1.1 431"), "\(answer.prefix(200))")
            #expect(closed)
            try await eventually(timeout: .seconds(10)) {
                served.log.contains { $0.hasPrefix("- - 431") || $0.contains(" 431 ") }
            }
        }
    }
}

/// The limits as the command line takes them (`resumectl serve`, the binary).
@Suite("serve limit options")
struct ServeLimitOptionsTests {
    @Test(
        """
        --max-upload-size takes suffixes (1K = 1024 bytes); --threads 1 serves; a bad size, --max-uploads 0 or \
        --threads 0 is a usage error
        """
    )
    func options() async throws {
        let w = try Workspace()
        let (serve, port) = try await ServeProcess.start(
            folder: w.path("www"), ["--max-upload-size", "1K", "--threads", "1"])
        defer { serve.send(signal: SIGTERM) }
        let url = "http://127.0.0.1:\(port)"
        let fits = try await CurlExchange.run([
            "-X", "PUT", "--data-binary", String(repeating: "a", count: 1024), url + "/fits.txt",
        ])
        #expect(fits.status == 201)
        let tooBig = try await CurlExchange.run([
            "-X", "PUT", "--data-binary", String(repeating: "a", count: 1025), url + "/big.txt",
        ])
        #expect(tooBig.status == 413)
        #expect(!FileManager.default.fileExists(atPath: w.path("www/big.txt")))

        for bad in [
            ["--max-upload-size", "lots"], ["--max-uploads", "0"], ["--tls-cert", "x.pem"], ["--public-read"],
            ["--threads", "0"],
        ] {
            let r = try await runProcess(resumectlBinary, ["serve", w.path("www"), "--port", "0"] + bad)
            #expect(r.status == 64, "\(bad): \(r)")
            #expect(r.stderr.split(separator: "\n").count == 1, "\(bad): \(r.stderr)")
        }
    }
}
