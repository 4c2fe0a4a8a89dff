import Foundation
import Testing

/// tus 1.0.0 as its text says, end to end: tuspy whose last answer is lost learns at the upload's URL
/// that it finished; a finished upload answers after serve is killed and restarted, until DELETE
/// retires its URL (the file stays) or `--upload-timeout` runs out; and curl replays the MUSTs the
/// machine's tests check one by one (metadata on HEAD, X-HTTP-Method-Override, creation-defer-length).
@Suite("serve tus spec")
struct ServeTusSpecTests: StreamPipelines {
    static let tus = ["-H", "Tus-Resumable: 1.0.0"]
    static let body = ["-H", "Content-Type: application/offset+octet-stream"]

    static func base64(_ text: String) -> String { Data(text.utf8).base64EncodedString() }

    /// A tuspy upload of `file` to `endpoint`; prints the upload URL and the offset it ended at. With
    /// `storage`, the URL is kept there by fingerprint, and a second run asks that URL first.
    static func tuspy(_ endpoint: String, _ file: String, storage: String? = nil) async throws -> ProcessResult {
        let script = """
            import sys
            from tusclient import client
            from tusclient.storage import filestorage
            c = client.TusClient(sys.argv[1])
            kept = dict(store_url=True, url_storage=filestorage.FileStorage(sys.argv[3])) if len(sys.argv) > 3 else {}
            u = c.uploader(sys.argv[2], chunk_size=1 << 20, metadata={"filename": "t.bin", "filetype": \
            "application/octet-stream"},
                           retries=3, retry_delay=1, **kept)
            u.upload()
            print(u.url, u.offset)
            """
        return try await runProcess(
            "python3", ["-c", script, endpoint, file] + (storage.map { [$0] } ?? []), timeout: .seconds(120))
    }

    @Test("tuspy: the answer to its last PATCH is lost; HEAD gives the final offset, a PATCH there 204, and it is done")
    func lostLastAnswer() async throws {
        let w = try Workspace()
        let digest = try makeRandomFile(path: w.path("www/t.bin"), size: 2 << 20, seed: 47)
        try await InProcessServe.with { served in
            // Connections: POST, PATCH 1, PATCH 2 (stored, its answer cut after one byte), HEAD, PATCH at the end.
            let proxy = try FaultProxy(upstreamPort: served.port, plan: [.pass, .pass, .cutAfterDownstream(bytes: 1)])
            let r = try await Self.tuspy(proxy.url(for: "in/"), w.path("www/t.bin"))
            #expect(r.status == 0, "tuspy (make deps installs it): \(r)")
            #expect(r.stdout.hasSuffix(" \(2 << 20)\n"), "\(r.stdout)")
            #expect(try sha256(file: served.path("in/t.bin")) == digest)
            let lines = proxy.connections.flatMap(\.requestLines).map { String($0.prefix { $0 != " " }) }
            #expect(lines == ["POST", "PATCH", "PATCH", "HEAD", "PATCH"], "\(lines)")
            #expect(
                served.log.filter { $0.hasPrefix("PATCH /tus_upload/") }.last?.contains(" 204") == true, "\(served.log)"
            )
        }
    }

    @Test(
        """
        built serve killed after an upload finished: its URL still answers; tuspy asks it and sends nothing; DELETE \
        retires it, the file stays
        """
    )
    func finishedUploadAcrossKill() async throws {
        let w = try Workspace()
        let folder = w.path("served")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let digest = try makeRandomFile(path: w.path("www/t.bin"), size: 1_500_000, seed: 48)
        var (serve, port) = try await ServeDurabilityTests.startServe(folder: folder, port: 0)
        defer { serve.send(signal: SIGKILL) }
        let endpoint = "http://127.0.0.1:\(port)/in/"
        let first = try await Self.tuspy(endpoint, w.path("www/t.bin"), storage: w.path("tus.json"))
        #expect(first.status == 0, "\(first)")
        #expect(try sha256(file: folder + "/in/t.bin") == digest)
        let url = try #require(first.stdout.split(separator: " ").first.map(String.init))

        _ = try await ServeDurabilityTests.killAndRestart(&serve, folder: folder, port: port)
        let head = try await CurlExchange.run(Self.tus + ["-I", url])
        #expect(head.status == 200)
        #expect(head["upload-offset"] == "1500000")
        #expect(head["upload-length"] == "1500000")
        #expect(
            head["upload-metadata"]
                == "filename \(Self.base64("t.bin")),filetype \(Self.base64("application/octet-stream"))")
        // tuspy finds the upload by its fingerprint, asks its URL, and has nothing left to send.
        let again = try await Self.tuspy(endpoint, w.path("www/t.bin"), storage: w.path("tus.json"))
        #expect(again.status == 0, "\(again)")
        #expect(again.stdout == "\(url) 1500000\n")
        #expect(!serve.stderrSoFar.contains("POST /in/"), "\(serve.stderrSoFar)")

        let delete = try await CurlExchange.run(Self.tus + ["-X", "DELETE", url])
        #expect(delete.status == 204)
        #expect(try await CurlExchange.run(Self.tus + ["-I", url]).status == 404)
        #expect(try sha256(file: folder + "/in/t.bin") == digest)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder + "/.resumectl-uploads") == [])
    }

    @Test(
        """
        curl against built serve: metadata on HEAD, method override, creation-defer-length, a finished upload's URL \
        until DELETE
        """
    )
    func curlReplay() async throws {
        let w = try Workspace()
        let folder = w.path("served")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let (serve, port) = try await ServeDurabilityTests.startServe(folder: folder, port: 0)
        defer { serve.send(signal: SIGKILL) }
        let base = "http://127.0.0.1:\(port)"
        let override = "X-HTTP-Method-Override"

        // GET with the override OPTIONS is discovery; the Tus-Resumable of an OPTIONS is ignored.
        let options = try await CurlExchange.run([
            "-H", "\(override): OPTIONS", "-H", "Tus-Resumable: 0.2.2", base + "/",
        ])
        #expect(options.status == 204)
        #expect(options["tus-version"] == "1.0.0")
        #expect(
            options["tus-extension"]
                == "creation,creation-with-upload,creation-defer-length,termination,expiration,checksum,concatenation")

        // creation-defer-length: no length yet.
        let metadata = "filename \(Self.base64("d.bin")),private"
        let create = try await CurlExchange.run(
            Self.tus + [
                "-X", "POST", "-H", "Upload-Defer-Length: 1",
                "-H", "Upload-Metadata: \(metadata)", base + "/up/",
            ])
        #expect(create.status == 201)
        #expect(create["upload-expires"]?.hasSuffix(" GMT") == true)
        let url = base + (try #require(create["location"]))
        let deferred = try await CurlExchange.run(Self.tus + ["-I", url])
        #expect(deferred.status == 200)
        #expect(deferred["upload-offset"] == "0")
        #expect(deferred["upload-defer-length"] == "1")
        #expect(deferred["upload-length"] == nil)
        #expect(deferred["upload-metadata"] == metadata)
        #expect(deferred["cache-control"] == "no-store")

        // A POST that says PATCH appends; the length comes with the last PATCH.
        let part1 = try await CurlExchange.run(
            Self.tus + Self.body + [
                "-X", "POST", "-H", "\(override): PATCH",
                "-H", "Upload-Offset: 0", "--data-binary", "hello ", url,
            ])
        #expect(part1.status == 204)
        #expect(part1["upload-offset"] == "6")
        let wrongLength = try await CurlExchange.run(
            Self.tus + Self.body + [
                "-X", "PATCH", "-H", "Upload-Offset: 6",
                "-H", "Upload-Length: 5", "--data-binary", "", url,
            ])
        #expect(wrongLength.status == 400)
        let part2 = try await CurlExchange.run(
            Self.tus + Self.body + [
                "-X", "PATCH", "-H", "Upload-Offset: 6",
                "-H", "Upload-Length: 11", "--data-binary", "world", url,
            ])
        #expect(part2.status == 204)
        #expect(part2["upload-offset"] == "11")
        #expect(try String(contentsOfFile: folder + "/up/d.bin", encoding: .utf8) == "hello world")

        // Finished: HEAD (by override too) gives the final offset, a PATCH there 204, elsewhere 409.
        let done = try await CurlExchange.run(Self.tus + ["-H", "\(override): HEAD", url])
        #expect(done.status == 200)
        #expect(done["upload-offset"] == "11")
        #expect(done["upload-length"] == "11")
        #expect(done["upload-defer-length"] == nil)
        #expect(done["upload-metadata"] == metadata)
        let replay = try await CurlExchange.run(
            Self.tus + Self.body + ["-X", "PATCH", "-H", "Upload-Offset: 11", "--data-binary", "", url])
        #expect(replay.status == 204)
        #expect(replay["upload-offset"] == "11")
        let stale = try await CurlExchange.run(
            Self.tus + Self.body + ["-X", "PATCH", "-H", "Upload-Offset: 6", "--data-binary", "world", url])
        #expect(stale.status == 409)
        #expect(stale["upload-offset"] == "11")

        // DELETE (said by a POST) retires the URL; the file stays.
        let delete = try await CurlExchange.run(Self.tus + ["-X", "POST", "-H", "\(override): DELETE", url])
        #expect(delete.status == 204)
        #expect(try await CurlExchange.run(Self.tus + ["-I", url]).status == 404)
        #expect(
            try await CurlExchange.run(
                Self.tus + Self.body + ["-X", "PATCH", "-H", "Upload-Offset: 11", "--data-binary", "", url]
            ).status == 404)
        #expect(try String(contentsOfFile: folder + "/up/d.bin", encoding: .utf8) == "hello world")

        // A malformed metadata field is refused before anything is created.
        let bad = try await CurlExchange.run(
            Self.tus + ["-X", "POST", "-H", "Upload-Length: 3", "-H", "Upload-Metadata: a YQ==,a Yg==", base + "/up/"])
        #expect(bad.status == 400)
        let unsupported = try await CurlExchange.run([
            "-H", "Tus-Resumable: 0.2.2", "-X", "POST", "-H", "Upload-Length: 3", base + "/up/",
        ])
        #expect(unsupported.status == 412)
        #expect(unsupported["tus-version"] == "1.0.0")
    }

    @Test(
        "creation-defer-length: `producer | resumectl upload - URL --protocol tus` to serve, created without a length")
    func streamOverTus() async throws {
        let w = try Workspace()
        try await InProcessServe.with { served in
            // The producer waits for the test: resumectl creates the upload before the stream's end, its length
            // deferred.
            let go = w.path("go")
            let run = try startPipeline(
                w,
                producer:
                    "(head -c 2000000 /dev/urandom; while [ ! -e '\(go)' ]; do sleep 0.1; done; head -c 1000000 "
                    + "/dev/urandom)"
                    + " | tee >(sha256sum > \(w.path("sum")))",
                ["upload", "-", served.url + "/in/s.bin", "--protocol", "tus"])
            let store = served.path(".resumectl-uploads")
            var record: [String: Any]?
            let deadline = ContinuousClock.now + .seconds(60)
            while record == nil && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
                let names = (try? FileManager.default.contentsOfDirectory(atPath: store)) ?? []
                if let name = names.first(where: { $0.hasSuffix(".json") }),
                    let bytes = FileManager.default.contents(atPath: store + "/" + name)
                {
                    record = try? JSONSerialization.jsonObject(with: bytes) as? [String: Any]
                }
            }
            #expect(record?["kind"] as? String == "tus", "\(String(describing: record))")
            #expect(record != nil && record?["length"] == nil, "\(String(describing: record))")
            _ = FileManager.default.createFile(atPath: go, contents: nil)
            let r = try await run.wait(timeout: .seconds(120))
            #expect(status(r) == 0, "\(r)")
            let sum = try String(contentsOfFile: w.path("sum"), encoding: .utf8)
            #expect(sum.hasPrefix(try sha256(file: served.path("in/s.bin"))), "\(sum)")
            #expect(served.log.contains { $0.hasPrefix("POST /in/s.bin 201") }, "\(served.log)")
        }
    }

    @Test(
        """
        S3 store, two instances: a deferred length given by a PATCH on one is known to the other; finished, HEAD and \
        DELETE answer on either; the object stays
        """
    )
    func deferredAndFinishedOnS3() async throws {
        let cluster = try await S3ServeCluster(instances: 2)
        let (one, two) = ("http://127.0.0.1:\(cluster.ports[0])", "http://127.0.0.1:\(cluster.ports[1])")
        let create = try await CurlExchange.run(
            Self.tus + [
                "-X", "POST", "-H", "Upload-Defer-Length: 1",
                "-H", "Upload-Metadata: filename \(Self.base64("d.bin"))", one + "/s3/",
            ])
        #expect(create.status == 201)
        let path = try #require(create["location"])
        #expect(try await CurlExchange.run(Self.tus + ["-I", two + path])["upload-defer-length"] == "1")
        // The length comes with a PATCH that does not finish the upload: the other instance reads it from S3.
        let part1 = try await CurlExchange.run(
            Self.tus + Self.body + [
                "-X", "PATCH", "-H", "Upload-Offset: 0", "-H", "Upload-Length: 11",
                "--data-binary", "hello ", two + path,
            ])
        #expect(part1.status == 204)
        let between = try await CurlExchange.run(Self.tus + ["-I", one + path])
        #expect(between["upload-length"] == "11")
        #expect(between["upload-defer-length"] == nil)
        let part2 = try await CurlExchange.run(
            Self.tus + Self.body + ["-X", "PATCH", "-H", "Upload-Offset: 6", "--data-binary", "world", one + path])
        #expect(part2.status == 204)
        #expect(part2["upload-offset"] == "11")
        let head = try await CurlExchange.run(Self.tus + ["-I", two + path])
        #expect(head.status == 200)
        #expect(head["upload-offset"] == "11")
        #expect(head["upload-length"] == "11")
        #expect(head["upload-metadata"] == "filename \(Self.base64("d.bin"))")
        let replay = try await CurlExchange.run(
            Self.tus + Self.body + ["-X", "PATCH", "-H", "Upload-Offset: 11", "--data-binary", "", two + path])
        #expect(replay.status == 204)
        #expect(try await CurlExchange.run(Self.tus + ["-X", "DELETE", two + path]).status == 204)
        #expect(try await CurlExchange.run(Self.tus + ["-I", one + path]).status == 404)
        #expect(
            try await cluster.moto.sha256(cluster.bucket, cluster.key("s3/d.bin")) == sha256(Data("hello world".utf8)))
    }

    @Test("a finished upload answers until --upload-timeout, then 404")
    func finishedUploadExpires() async throws {
        // Long enough that a test runner starved by a hundred parallel tests still asks within it.
        try await InProcessServe.with({ $0.uploadTimeout = .seconds(15) }) { served in
            let create = try await CurlExchange.run(
                Self.tus + Self.body + [
                    "-X", "POST", "-H", "Upload-Length: 3",
                    "-H", "Upload-Metadata: filename \(Self.base64("e.bin"))", "--data-binary", "abc", served.url + "/",
                ])
            #expect(create.status == 201)
            #expect(create["upload-offset"] == "3")
            #expect(create["upload-expires"] == nil)
            let finished = ContinuousClock.now
            let url = served.url + (try #require(create["location"]))
            #expect(try await CurlExchange.run(Self.tus + ["-I", url])["upload-offset"] == "3")
            var status = 200
            while status == 200 && ContinuousClock.now < finished + .seconds(90) {
                try await Task.sleep(for: .milliseconds(500))
                status = try await CurlExchange.run(Self.tus + ["-I", url]).status
            }
            #expect(status == 404)
            #expect(ContinuousClock.now - finished >= .seconds(14), "it answered for about --upload-timeout")
            #expect(try String(contentsOfFile: served.path("e.bin"), encoding: .utf8) == "abc")
        }
    }

    @Test("--public-read: a GET that says POST (X-HTTP-Method-Override) needs a login like a POST")
    func overrideNeedsLogin() async throws {
        let w = try Workspace()
        // openssl passwd -6 -salt saltsalt 'right one'
        let hash = "$6$saltsalt$/N2VYO2xuXUy5qNhMJuWZCioJMPZTN8sG70/eqeODUcSCfnLyZb5yVO/SbS4/w3Kdyas9jEOA3cZXHq7r0Wir0"
        try "carol:\(hash)\n".write(toFile: w.path("htpasswd"), atomically: true, encoding: .utf8)
        try await InProcessServe.with({
            $0.htpasswd = w.path("htpasswd"); $0.publicRead = true
        }) { served in
            let sneaky = try await CurlExchange.run(
                Self.tus + [
                    "-H", "X-HTTP-Method-Override: POST", "-H", "Upload-Length: 3",
                    "-H", "Upload-Metadata: filename \(Self.base64("s.bin"))", served.url + "/",
                ])
            #expect(sneaky.status == 401)
            let options = try await CurlExchange.run(["-H", "X-HTTP-Method-Override: OPTIONS", served.url + "/"])
            #expect(options.status == 204)
            let login = try await CurlExchange.run(
                Self.tus + [
                    "-u", "carol:right one", "-H", "X-HTTP-Method-Override: POST",
                    "-H", "Upload-Length: 0", "-H", "Upload-Metadata: filename \(Self.base64("s.bin"))",
                    served.url + "/",
                ])
            #expect(login.status == 201)
            #expect(FileManager.default.fileExists(atPath: served.path("s.bin")))
        }
    }
}
