import Foundation
import Testing

/// A server that answers what cannot be true (issue 22). Every case ends in a documented exit status with
/// one line on stderr, writes nothing outside its folder, and never ends 0 with fewer bytes than declared.
@Suite struct HostileServerTests {
    static let body = randomBytes(count: 1000, seed: 22)

    /// One malformed answer to a download, and the exit status it must end in.
    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let status: Int32
        let respond: @Sendable (RawResponseServer.Request) -> [UInt8]
        var testDescription: String { name }
    }

    static func ok(_ headers: [String], body: [UInt8] = HostileServerTests.body)
        -> @Sendable (RawResponseServer.Request) -> [UInt8]
    {
        { _ in rawResponse("HTTP/1.1 200 OK", headers + ["Connection: close"], body: body) }
    }

    static let cases: [Case] = [
        // The finding: libcurl drops a length it cannot hold and reads to the close.
        Case(name: "length beyond 63 bits", status: 75, respond: ok(["Content-Length: 99999999999999999999999"])),
        Case(name: "negative length", status: 75, respond: ok(["Content-Length: -1000"])),
        Case(name: "two lengths", status: 75, respond: ok(["Content-Length: 1000", "Content-Length: 2000"])),
        Case(name: "length list that disagrees", status: 75, respond: ok(["Content-Length: 1000, 999"])),
        Case(name: "body shorter than declared", status: 75, respond: ok(["Content-Length: 2000", "ETag: \"a\""])),
        Case(name: "body longer than declared", status: 0, respond: ok(["Content-Length: 1000"], body: body + body)),
        Case(
            name: "206 without Content-Range", status: 1,
            respond: { _ in
                rawResponse("HTTP/1.1 206 Partial Content", ["Content-Length: 1000", "Connection: close"], body: body)
            }),
        Case(
            name: "overflowing Content-Range", status: 1,
            respond: { _ in
                rawResponse(
                    "HTTP/1.1 206 Partial Content",
                    [
                        "Content-Range: bytes 0-99999999999999999999/99999999999999999999", "Content-Length: 1000",
                        "Connection: close",
                    ], body: body)
            }),
        Case(
            name: "backwards Content-Range", status: 1,
            respond: { _ in
                rawResponse(
                    "HTTP/1.1 206 Partial Content",
                    ["Content-Range: bytes 999-0/1000", "Content-Length: 1000", "Connection: close"], body: body)
            }),
        Case(
            name: "Content-Range ending at the largest offset", status: 75,
            respond: { _ in
                rawResponse(
                    "HTTP/1.1 206 Partial Content",
                    ["Content-Range: bytes 0-9223372036854775807/*", "Content-Length: 1000", "Connection: close"],
                    body: body)
            }),
        Case(
            name: "200 KB header line", status: 1,
            respond: ok(["X-Big: " + String(repeating: "a", count: 200_000), "Content-Length: 1000"])),
        Case(name: "5000 headers", status: 0, respond: ok((0..<5000).map { "X-H\($0): v" } + ["Content-Length: 1000"])),
        Case(
            name: "100 KB ETag", status: 0,
            respond: ok(["ETag: \"" + String(repeating: "e", count: 100_000) + "\"", "Content-Length: 1000"])),
        Case(
            name: "broken chunking", status: 75,
            respond: { _ in
                rawResponse(
                    "HTTP/1.1 200 OK", ["Transfer-Encoding: chunked", "Connection: close"],
                    body: Array("zz\r\nhello\r\n0\r\n\r\n".utf8))
            }),
        Case(
            name: "chunks cut before the last", status: 75,
            respond: { _ in
                rawResponse(
                    "HTTP/1.1 200 OK", ["Transfer-Encoding: chunked", "Connection: close"],
                    body: Array("3e8\r\n".utf8) + body.prefix(500))
            }),
        Case(
            name: "chunk size beyond 64 bits", status: 75,
            respond: { _ in
                rawResponse(
                    "HTTP/1.1 200 OK", ["Transfer-Encoding: chunked", "Connection: close"],
                    body: Array("fffffffffffffffffffff\r\nab\r\n0\r\n\r\n".utf8))
            }),
        Case(
            name: "redirect loop", status: 1,
            respond: { _ in
                rawResponse("HTTP/1.1 302 Found", ["Location: /loop", "Content-Length: 0", "Connection: close"])
            }),
        Case(
            name: "file redirect", status: 1,
            respond: { _ in
                rawResponse(
                    "HTTP/1.1 302 Found", ["Location: file:///etc/passwd", "Content-Length: 0", "Connection: close"])
            }),
        Case(
            name: "NUL in a header", status: 75,
            respond: { _ in
                Array("HTTP/1.1 200 OK\r\nX-A: a\u{0}b\r\nContent-Length: 1000\r\nConnection: close\r\n\r\n".utf8)
                    + body
            }),
        Case(
            name: "absurd Retry-After", status: 75,
            respond: { _ in
                rawResponse(
                    "HTTP/1.1 503 Busy",
                    ["Retry-After: 99999999999999999999999", "Content-Length: 0", "Connection: close"])
            }),
        Case(
            name: "status line without a status", status: 1,
            respond: { _ in rawResponse("HTTP/1.1 OK", ["Content-Length: 1000", "Connection: close"], body: body) }),
        Case(
            name: "status 999", status: 1,
            respond: { _ in rawResponse("HTTP/1.1 999 What", ["Content-Length: 1000", "Connection: close"], body: body)
            }),
        Case(
            name: "endless 1xx", status: 75,
            respond: { _ in Array(String(repeating: "HTTP/1.1 102 Processing\r\n\r\n", count: 20_000).utf8) }),
        Case(name: "no response at all", status: 75, respond: { _ in [] }),
        Case(name: "garbage instead of HTTP", status: 1, respond: { _ in Array("\u{1}\u{2}garbage\r\n\r\n".utf8) }),
    ]

    @Test(arguments: cases)
    func downloadEndsInItsDocumentedStatus(_ c: Case) async throws {
        let w = try Workspace()
        let server = try RawResponseServer(c.respond)
        defer { server.stop() }
        let r = try await w.run(
            ["download", server.url(for: "loop"), "-o", "r.bin", "--retries", "0", "-q"], timeout: .seconds(60))
        #expect(!r.signaled, "\(r)")
        // libcurl's bare words ("Out of memory", a redirect's "Protocol … not supported") are replaced by ours.
        #expect(!r.stderr.contains("Out of memory") && !r.stderr.contains("not supported or disabled"), "\(r)")
        #expect(r.status == c.status, "\(c.name): \(r)")
        try Self.expectContained(w, r, declared: c.status == 0 ? Self.body.count : nil)
    }

    /// One line on stderr for a failure; nothing but `r.bin*` in the output folder and nothing beside the
    /// workspace's own folders; a finished file has exactly the declared bytes.
    static func expectContained(_ w: Workspace, _ r: ProcessResult, declared: Int?) throws {
        let lines = r.stderr.split(separator: "\n")
        if r.status != 0 { #expect(lines.count == 1, "stderr: \(r.stderr)") }
        let out = try FileManager.default.contentsOfDirectory(atPath: w.out)
        #expect(out.allSatisfy { $0.hasPrefix("r.bin") }, "\(out)")
        let top = Set(try FileManager.default.contentsOfDirectory(atPath: w.path("")))
        #expect(top.isSubset(of: ["state", "out", "www"]), "\(top)")
        if let declared {
            #expect(w.size(w.out + "/r.bin") == declared)
        } else {
            #expect(!w.exists(w.out + "/r.bin"))
        }
    }

    @Test func fileRedirectIsOurOwnSentence() async throws {
        let w = try Workspace()
        let server = try RawResponseServer { _ in
            rawResponse(
                "HTTP/1.1 302 Found", ["Location: file:///etc/passwd", "Content-Length: 0", "Connection: close"])
        }
        defer { server.stop() }
        let r = try await w.run(["download", server.url(), "-o", "r.bin", "--retries", "0", "-q"])
        #expect(r.status == 1)
        #expect(r.stderr.contains("only http and https are followed"), "\(r)")
        #expect(!r.stderr.contains("Protocol"), "\(r)")
    }

    /// The finding: 10^23 declared, 1,000 bytes and a close used to be a complete file with exit 0.
    @Test func undeclarableLengthKeepsTheTokenAndNoFile() async throws {
        let w = try Workspace()
        let server = try RawResponseServer(Self.ok(["Content-Length: 99999999999999999999999", "ETag: \"x\""]))
        defer { server.stop() }
        let r = try await w.run([
            "download", server.url(), "-o", "r.bin", "--retries", "1", "--retry-delay", "0.01", "-q",
        ])
        #expect(r.status == 75, "\(r)")
        #expect(r.stderr.contains("unusable Content-Length"), "\(r)")
        #expect(r.stderr.contains("resumectl resume"), "\(r)")
        #expect(server.requests.count == 2)
        #expect(!w.exists(w.out + "/r.bin"))
    }

    @Test(arguments: ["--url", "-i"])
    func nonHTTPURLOnTheCommandLineIs64(_ how: String) async throws {
        let w = try Workspace()
        let r: ProcessResult
        if how == "-i" {
            try "file:///etc/passwd x\n".write(toFile: w.path("www/list.txt"), atomically: true, encoding: .utf8)
            r = try await w.run(["download", "-i", w.path("www/list.txt"), "-q"])
            #expect(r.status == 64, "\(r)")
            #expect(r.stderr.split(separator: "\n").count == 1, "\(r)")
        } else {
            r = try await w.run(["download", "file:///etc/passwd", "-o", "r.bin", "-q"])
            #expect(r.status == 64, "\(r)")
        }
        #expect(r.stderr.contains("only http and https"), "\(r)")
    }

    /// A token whose URL was edited to `file://` is refused as a token (65), in our words, not libcurl's.
    @Test func tokenEditedToAFileURLIs65() async throws {
        let w = try Workspace()
        let server = try RawResponseServer(Self.ok(["Content-Length: 2000", "ETag: \"a\""]))
        defer { server.stop() }
        let first = try await w.run(["download", server.url(), "-o", "r.bin", "--retries", "0", "-q"])
        #expect(first.status == 75, "\(first)")
        let id = try #require(try w.tokens().first)
        // `resume --url` with another scheme is refused before the token is touched: 64.
        let other = try await w.run(["resume", id, "--url", "file:///etc/passwd", "-q"])
        #expect(other.status == 64, "\(other)")
        #expect(other.stderr.contains("only http and https"), "\(other)")
        let file = w.state + "/tokens/\(id).json"
        let text = try String(contentsOfFile: file, encoding: .utf8)
        try text.replacingOccurrences(of: server.url(), with: "file:///etc/passwd").write(
            toFile: file, atomically: true, encoding: .utf8)
        let r = try await w.run(["resume", id, "-q", "--retries", "0"])
        #expect(r.status == 65, "\(r)")
        #expect(r.stderr.contains("url is not an http or https URL"), "\(r)")

        // And a negative committed count is named as such, not an "Invalid argument" from the file system.
        let negativeText = text.replacingOccurrences(
            of: #""committedBytes" : \d+"#, with: #""committedBytes" : -1"#, options: .regularExpression)
        #expect(negativeText != text)
        try negativeText.write(toFile: file, atomically: true, encoding: .utf8)
        let negative = try await w.run(["resume", id, "-q", "--retries", "0"])
        #expect(negative.status == 65, "\(negative)")
        #expect(negative.stderr.contains("download.committedBytes is -1: must not be negative"), "\(negative)")
        #expect(negative.stderr.split(separator: "\n").count == 1)
    }

    // MARK: Uploads

    /// The finding: a complete POST answered 201, `Upload-Complete: ?0` and an offset beyond the file.
    @Test(arguments: ["99999999999999999999", "5000", "1000"])
    func ietfImpossibleAnswerIsNotSuccess(offset: String) async throws {
        let w = try Workspace()
        try Data(Self.body).write(to: URL(fileURLWithPath: w.path("www/src.bin")))
        let server = try RawResponseServer { request in
            guard request.method == "POST" else { return rawResponse("HTTP/1.1 404 Not Found", ["Content-Length: 0"]) }
            return rawResponse(
                "HTTP/1.1 104 Upload Resumption Supported", ["Upload-Draft-Interop-Version: 8", "Location: /u/1"])
                + rawResponse(
                    "HTTP/1.1 201 Created",
                    [
                        "Upload-Draft-Interop-Version: 8", "Location: /u/1", "Upload-Complete: ?0",
                        "Upload-Offset: \(offset)", "Content-Length: 0", "Connection: close",
                    ])
        }
        defer { server.stop() }
        let r = try await w.run([
            "upload", w.path("www/src.bin"), server.url(for: "files/src.bin"), "--protocol", "ietf",
            "--interop-version", "8", "--retries", "0", "-q",
        ])
        #expect(r.status == 1, "\(r)")
        #expect(r.stdout.isEmpty, "\(r)")
        #expect(r.stderr.split(separator: "\n").count == 1, "\(r)")
        #expect(
            r.stderr.contains("not a byte count") || r.stderr.contains("more than the 1000 sent")
                || r.stderr.contains("Upload-Complete: ?0"), "\(r)")
    }

    @Test func tusOffsetBeyondWhatWasSentStops() async throws {
        let w = try Workspace()
        try Data(Self.body).write(to: URL(fileURLWithPath: w.path("www/src.bin")))
        let server = try RawResponseServer { request in
            switch request.method {
            case "OPTIONS":
                return rawResponse(
                    "HTTP/1.1 204 No Content",
                    ["Tus-Resumable: 1.0.0", "Tus-Version: 1.0.0", "Tus-Extension: creation", "Connection: close"])
            case "POST":
                return rawResponse(
                    "HTTP/1.1 201 Created",
                    ["Tus-Resumable: 1.0.0", "Location: /files/x", "Content-Length: 0", "Connection: close"])
            default:
                return rawResponse(
                    "HTTP/1.1 204 No Content", ["Tus-Resumable: 1.0.0", "Upload-Offset: 5000", "Connection: close"])
            }
        }
        defer { server.stop() }
        let r = try await w.run([
            "upload", w.path("www/src.bin"), server.url(for: "files/"), "--protocol", "tus", "--retries", "0", "-q",
        ])
        #expect(r.status == 1, "\(r)")
        #expect(r.stderr.contains("the server acknowledged 5000 bytes, more than the 1000 sent"), "\(r)")
    }
}
