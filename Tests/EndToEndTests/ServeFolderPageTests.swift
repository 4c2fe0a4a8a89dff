import Foundation
import Testing

/// The folder page of `resumectl serve`: the listing (escaped names, folders first, a CSP), and a
/// real browser (Debian's headless chromium, driven by selenium through chromium-driver) uploading a
/// 96 MiB file through a throttled proxy that also cuts connections, reloading midway and choosing the
/// file again: the upload continues from the server's offset instead of starting over.
@Suite("serve folder page")
struct ServeFolderPageTests {
    @Test("the listing: folders first, names escaped, assets from the binary under a CSP")
    func listing() async throws {
        try await InProcessServe.with { served in
            try FileManager.default.createDirectory(atPath: served.path("zfolder"), withIntermediateDirectories: true)
            try Data("x".utf8).write(to: URL(fileURLWithPath: served.path("a <b>&\"c\".txt")))
            try Data("hidden".utf8).write(to: URL(fileURLWithPath: served.path(".secret")))
            let page = try await CurlExchange.run(["-H", "Accept: text/html", served.url + "/"])
            #expect(page.status == 200)
            #expect(page["content-type"] == "text/html; charset=utf-8")
            let csp = try #require(page["content-security-policy"])
            #expect(csp.contains("script-src 'self'") && csp.contains("default-src 'none'"))
            let html = String(decoding: page.body, as: UTF8.self)
            #expect(html.contains("a &lt;b&gt;&amp;&quot;c&quot;.txt"))
            #expect(!html.contains("<b>&"))
            #expect(html.contains("href=\"a%20%3Cb%3E%26%22c%22.txt\""), "\(html)")
            #expect(!html.contains(".secret"))
            let folderAt = try #require(html.range(of: "zfolder/"))
            let fileAt = try #require(html.range(of: "a &lt;b"))
            #expect(folderAt.lowerBound < fileAt.lowerBound, "folders first")
            #expect(html.contains("type=\"file\""))

            let script = try await CurlExchange.run([served.url + "/.resumectl/page.js"])
            #expect(script.status == 200 && script.body.count > 1000)
            #expect(script["content-type"]?.hasPrefix("text/javascript") == true)

            // Without Accept: text/html a folder is still no file; without the slash, a redirect.
            #expect(try await CurlExchange.run([served.url + "/zfolder/"]).status == 404)
            let redirect = try await CurlExchange.run(["-H", "Accept: text/html", served.url + "/zfolder"])
            #expect(redirect.status == 301 && redirect["location"] == "/zfolder/")
        }
        try await InProcessServe.with({ $0.readOnly = true }) { served in
            let page = try await CurlExchange.run(["-H", "Accept: text/html", served.url + "/"])
            #expect(page.status == 200)
            #expect(
                !String(decoding: page.body, as: UTF8.self).contains("type=\"file\""), "no upload area when read-only")
        }
    }

    /// serve's folder page in headless chromium under selenium (scripts/folder_page.py: its modes and output).
    static let browser = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scripts/folder_page.py").path

    @Test(
        """
        chromium uploads 96 MiB through a throttled, cutting proxy, is reloaded midway, continues when the file is \
        chosen again, pauses and resumes
        """
    )
    func browserUploadResumesAfterReload() async throws {
        let w = try Workspace()
        let size = 96 << 20
        let digest = try makeRandomFile(path: w.path("www/movie.bin"), size: size, seed: 15)
        try await InProcessServe.with { served in
            try FileManager.default.createDirectory(atPath: served.path("inbox"), withIntermediateDirectories: true)
            // Every connection is throttled and cut once 40 MiB went up it: only the ones carrying the
            // upload get that far, and the page has to retry what was cut.
            let proxy = try FaultProxy(
                upstreamPort: served.port,
                plan: Array(
                    repeating: Fault.cutAfterUpstream(bytes: 40 << 20).throttled(bytesPerSecond: 12 << 20), count: 64))
            let r = try await runProcess(
                "python3",
                [Self.browser, "reload", proxy.url(for: "inbox/"), w.path("www/movie.bin"), "movie.bin", "1"],
                timeout: .seconds(300))
            #expect(r.status == 0, "chromium, chromium-driver and selenium (make deps installs them): \(r)")
            let result = try #require(
                try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any], "\(r)")
            #expect(result["final"] as? String == "done", "\(result) \(served.log.suffix(20))")
            #expect(result["stored_urls"] as? Int == 1, "the upload URL was kept across the reload: \(result)")
            let before =
                (result["progress_before_reload"] as? Double) ?? Double((result["progress_before_reload"] as? Int) ?? 0)
            #expect(before > 0 && before < Double(size), "the reload came midway: \(result)")
            #expect(try sha256(file: served.path("inbox/movie.bin")) == digest)
            #expect(Double(proxy.bytesUpstream) < 1.25 * Double(size), "\(proxy.bytesUpstream) bytes through the proxy")
            let cuts = proxy.connections.filter(\.triggered).count
            #expect(cuts >= 1, "a connection was cut and the page went on")
            #expect(result["listed"] as? Bool == true)
            #expect(
                result["paused_state"] as? String == "paused" && result["moved_while_paused"] as? Bool == false,
                "\(result)")
            // One creation: the second choice continued the first upload.
            #expect(served.log.filter { $0.hasPrefix("POST /inbox/ 201") }.count == 1, "\(served.log)")
        }
    }
}
