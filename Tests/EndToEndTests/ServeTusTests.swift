import Foundation
import Testing

/// `resumectl serve` as a tus 1.0.0 server: tuspy (the Python client, from PyPI) through a proxy that
/// cuts three PATCHes, the built `resumectl upload --protocol tus` and `--protocol auto`, and the
/// protocol's edges (OPTIONS, checksum mismatch 460, termination, expiration, path rules, 409).
@Suite("serve tus")
struct ServeTusTests {
    static let tus = ["-H", "Tus-Resumable: 1.0.0"]

    static func base64(_ text: String) -> String { Data(text.utf8).base64EncodedString() }

    @Test("tuspy uploads to a folder URL through three cuts; the file lands under its filename")
    func tuspyThroughCuts() async throws {
        let w = try Workspace()
        let size = 4_000_000
        let digest = try makeRandomFile(path: w.path("www/tuspy.bin"), size: size, seed: 12)
        try await InProcessServe.with { served in
            // Connections: POST, then each PATCH (1 MiB) and, after a cut, a HEAD; requests opens one per call.
            let proxy = try FaultProxy(
                upstreamPort: served.port,
                plan: [
                    .pass, .cutAfterUpstream(bytes: 300_000), .pass, .cutAfterUpstream(bytes: 500_000), .pass,
                    .pass, .cutAfterUpstream(bytes: 700_000),
                ])
            let script = """
                import sys
                from tusclient import client
                c = client.TusClient(sys.argv[1])
                u = c.uploader(sys.argv[2], chunk_size=1 << 20, metadata={"filename": "tuspy.bin"},
                               retries=10, retry_delay=1, upload_checksum=True)
                u.upload()
                print(u.url)
                """
            let r = try await runProcess(
                "python3", ["-c", script, proxy.url(for: "inbox/"), w.path("www/tuspy.bin")], timeout: .seconds(120))
            #expect(r.status == 0, "tuspy (make deps installs it): \(r)")
            #expect(r.stdout.contains("/tus_upload/"), "\(r.stdout)")
            #expect(try sha256(file: served.path("inbox/tuspy.bin")) == digest)
            #expect(proxy.connections.filter(\.triggered).count == 3, "\(proxy.connections)")
            // It continued after each cut: no more than a chunk sent again per cut.
            #expect(proxy.bytesUpstream < size + 3 * (1 << 20), "\(proxy.bytesUpstream)")
            let methods = proxy.connections.flatMap(\.requestLines).map { String($0.prefix { $0 != " " }) }
            #expect(methods.contains("HEAD") && methods.contains("PATCH") && methods.first == "POST", "\(methods)")
            #expect(serveUploadLeftovers(served.folder.path) == [])
        }
    }

    @Test("resumectl upload --protocol tus and --protocol auto")
    func resumectlTusAndAuto() async throws {
        let w = try Workspace()
        let digest = try makeRandomFile(path: w.path("www/r.bin"), size: 3_000_000, seed: 13)
        try await InProcessServe.with { served in
            let tus = try await w.run(["upload", w.path("www/r.bin"), served.url + "/up/", "--protocol", "tus"])
            #expect(tus.status == 0, "\(tus)")
            #expect(try sha256(file: served.path("up/r.bin")) == digest)
            #expect(served.log.contains { $0.hasPrefix("POST /up/ 201") }, "\(served.log)")

            let auto = try await w.run([
                "upload", w.path("www/r.bin"), served.url + "/auto/r.bin", "--protocol", "auto",
            ])
            #expect(auto.status == 0, "\(auto)")
            #expect(try sha256(file: served.path("auto/r.bin")) == digest)
        }
    }

    @Test("OPTIONS, HEAD, checksum mismatch (460), termination, expiry header, path rules and 409")
    func protocolEdges() async throws {
        let w = try Workspace()
        _ = try makeRandomFile(path: w.path("www/p.bin"), size: 100_000, seed: 14)
        try await InProcessServe.with({ $0.maxUploadSize = 1_000_000 }) { served in
            let options = try await CurlExchange.run(["-X", "OPTIONS", served.url + "/"])
            #expect(options.status == 204)
            #expect(options["tus-version"] == "1.0.0")
            let extensions = "creation,creation-with-upload,creation-defer-length,termination,expiration,checksum"
            #expect(options["tus-extension"] == extensions + ",concatenation")
            #expect(options["tus-checksum-algorithm"] == "sha1,sha256")
            #expect(options["tus-max-size"] == "1000000")

            let tooBig = try await CurlExchange.run(
                Self.tus + [
                    "-X", "POST", "-H", "Upload-Length: 2000000",
                    "-H", "Upload-Metadata: filename \(Self.base64("big.bin"))", served.url + "/",
                ])
            #expect(tooBig.status == 413)

            let create = try await CurlExchange.run(
                Self.tus + [
                    "-X", "POST", "-H", "Upload-Length: 100000",
                    "-H",
                    "Upload-Metadata: filename \(Self.base64("p.bin")),filetype "
                        + "\(Self.base64("application/octet-stream"))",
                    served.url + "/dir/",
                ])
            #expect(create.status == 201)
            let location = try #require(create["location"])
            #expect(location.hasPrefix("/tus_upload/"))
            let url = served.url + location

            let head = try await CurlExchange.run(Self.tus + ["-I", url])
            #expect(head["upload-offset"] == "0")
            #expect(head["upload-length"] == "100000")
            #expect(head["cache-control"] == "no-store")

            // A wrong checksum: 460, nothing counted.
            let wrong = try await CurlExchange.run(
                Self.tus + [
                    "-X", "PATCH", "-H", "Content-Type: application/offset+octet-stream",
                    "-H", "Upload-Offset: 0", "-H",
                    "Upload-Checksum: sha256 \(Data(repeating: 0, count: 32).base64EncodedString())",
                    "--data-binary", "@" + w.path("www/p.bin"), url,
                ])
            #expect(wrong.status == 460)
            #expect(try await CurlExchange.run(Self.tus + ["-I", url])["upload-offset"] == "0")

            let content = try Data(contentsOf: URL(fileURLWithPath: w.path("www/p.bin")))
            let firstHalf = w.path("first.bin")
            try content.prefix(40_000).write(to: URL(fileURLWithPath: firstHalf))
            let sha1 = try await runProcess("sh", ["-c", "openssl dgst -sha1 -binary \(firstHalf) | base64"])
            let patch = try await CurlExchange.run(
                Self.tus + [
                    "-X", "PATCH", "-H", "Content-Type: application/offset+octet-stream",
                    "-H", "Upload-Offset: 0", "-H",
                    "Upload-Checksum: sha1 \(sha1.stdout.trimmingCharacters(in: .whitespacesAndNewlines))",
                    "--data-binary", "@" + firstHalf, url,
                ])
            #expect(patch.status == 204)
            #expect(patch["upload-offset"] == "40000")
            #expect(patch["upload-expires"]?.hasSuffix(" GMT") == true)
            #expect(patch["tus-resumable"] == "1.0.0")

            let stale = try await CurlExchange.run(
                Self.tus + [
                    "-X", "PATCH", "-H", "Content-Type: application/offset+octet-stream",
                    "-H", "Upload-Offset: 0", "--data-binary", "x", url,
                ])
            #expect(stale.status == 409)

            let delete = try await CurlExchange.run(Self.tus + ["-X", "DELETE", url])
            #expect(delete.status == 204)
            #expect(try await CurlExchange.run(Self.tus + ["-I", url]).status == 404)
            #expect(!FileManager.default.fileExists(atPath: served.path("dir/p.bin")))

            let escape = try await CurlExchange.run(
                Self.tus + [
                    "-X", "POST", "-H", "Upload-Length: 10",
                    "-H", "Upload-Metadata: filename \(Self.base64("../x.bin"))", served.url + "/",
                ])
            #expect(escape.status == 400)
            let hidden = try await CurlExchange.run(
                Self.tus + [
                    "-X", "POST", "-H", "Upload-Length: 10",
                    "-H", "Upload-Metadata: filename \(Self.base64(".x"))", served.url + "/",
                ])
            #expect(hidden.status == 403)
            let noVersion = try await CurlExchange.run(["-X", "PATCH", "--data-binary", "x", url])
            #expect(noVersion.status == 412)

            try Data("old".utf8).write(to: URL(fileURLWithPath: served.path("exists.bin")))
            let exists = try await CurlExchange.run(
                Self.tus + [
                    "-X", "POST", "-H", "Upload-Length: 10",
                    "-H", "Upload-Metadata: filename \(Self.base64("exists.bin"))", served.url + "/",
                ])
            #expect(exists.status == 409)

            // creation-with-upload: the whole file in the POST.
            let whole = try await CurlExchange.run(
                Self.tus + [
                    "-X", "POST", "-H", "Upload-Length: 100000",
                    "-H", "Content-Type: application/offset+octet-stream",
                    "-H", "Upload-Metadata: filename \(Self.base64("whole.bin"))", "--data-binary",
                    "@" + w.path("www/p.bin"), served.url + "/",
                ])
            #expect(whole.status == 201)
            #expect(whole["upload-offset"] == "100000")
            #expect(try Data(contentsOf: URL(fileURLWithPath: served.path("whole.bin"))) == content)
        }
    }
}
