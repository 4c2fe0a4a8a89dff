import Foundation
import NIOHTTP1
import ResumeKit
import Testing

@testable import ResumeServer

/// The pure parts of `serve`'s new rules, without a socket: the htpasswd reader and libcrypt check,
/// the login throttle, Basic credentials, tus metadata, the page's escaping, the upload admission.
@Suite("serve pure parts")
struct ServePureTests {
    @Test("htpasswd: comments and blank lines pass; other formats, malformed hashes and repeats name their line")
    func passwordFileParsing() throws {
        let sha512 =
            "$6$saltsalt$/N2VYO2xuXUy5qNhMJuWZCioJMPZTN8sG70/eqeODUcSCfnLyZb5yVO/SbS4/w3Kdyas9jEOA3cZXHq7r0Wir0"
        let file = try PasswordFile.parse("# team\n\nalice:\(sha512)\r\n", path: "p")
        #expect(file.users == 1)
        for (text, line) in [
            ("alice:\(sha512)\nbob:$apr1$abc$def\n", 2),
            ("\n\nbob:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=\n", 3),
            ("justaname\n", 1),
            (":\(sha512)\n", 1),
            ("alice:$6$\n", 1),
            ("alice:\(sha512)\nalice:\(sha512)\n", 2),
        ] {
            #expect {
                _ = try PasswordFile.parse(text, path: "p")
            } throws: { error in
                guard case ServeError.badPasswordFile(_, let number, _) = error else { return false }
                return number == line
            }
        }
    }

    @Test("libcrypt verifies SHA-crypt: the right password passes, any other does not")
    func passwordVerification() throws {
        // openssl passwd -6 -salt saltsalt 'right one'
        let hash = "$6$saltsalt$/N2VYO2xuXUy5qNhMJuWZCioJMPZTN8sG70/eqeODUcSCfnLyZb5yVO/SbS4/w3Kdyas9jEOA3cZXHq7r0Wir0"
        let file = try PasswordFile.parse("carol:\(hash)\n", path: "p")
        #expect(file.verify(user: "carol", password: "right one"))
        #expect(!file.verify(user: "carol", password: "right on"))
        #expect(!file.verify(user: "carol", password: ""))
        #expect(!file.verify(user: "dave", password: "right one"))
    }

    @Test("the login throttle: five failures in the window, then Retry-After until it ends")
    func throttle() {
        let throttle = LoginThrottle(limit: 5, window: .seconds(60))
        let start = ContinuousClock.now
        for second in 0..<4 { throttle.recordFailure("10.0.0.1", now: start + .seconds(second)) }
        #expect(throttle.retryAfter("10.0.0.1", now: start + .seconds(5)) == nil)
        throttle.recordFailure("10.0.0.1", now: start + .seconds(10))
        #expect(throttle.retryAfter("10.0.0.1", now: start + .seconds(10)) == 50)
        #expect(throttle.retryAfter("10.0.0.2", now: start + .seconds(10)) == nil)
        #expect(throttle.retryAfter("10.0.0.1", now: start + .seconds(61)) == nil)
    }

    @Test("Basic credentials: scheme case, colons in passwords, bad base64 and other schemes")
    func basicCredentials() {
        let encoded = Data("alice:pa:ss word".utf8).base64EncodedString()
        #expect(LoginGate.basicCredentials("Basic \(encoded)").map { [$0.0, $0.1] } == ["alice", "pa:ss word"])
        #expect(LoginGate.basicCredentials("basic \(encoded) ").map { [$0.0, $0.1] } == ["alice", "pa:ss word"])
        #expect(LoginGate.basicCredentials("Bearer \(encoded)") == nil)
        #expect(LoginGate.basicCredentials("Basic ***") == nil)
        #expect(LoginGate.basicCredentials("Basic \(Data("nocolon".utf8).base64EncodedString())") == nil)
        #expect(LoginGate.printable("a\"b\n") == "\"a\\u{22}b\\u{a}\"")
    }

    @Test("tus metadata and the page's escaping")
    func metadataAndEscaping() {
        let metadata = TusMetadata.parse(
            "filename \(Data("été.bin".utf8).base64EncodedString()),is_confidential,filetype dGV4dA==")
        #expect(metadata == ["filename": "été.bin", "is_confidential": "", "filetype": "text"])
        #expect(FolderPage.escaped("<a href='x'>&\"") == "&lt;a href=&#39;x&#39;&gt;&amp;&quot;")
        #expect(FolderListing.percentEncoded("a b/é?#") == "a%20b%2F%C3%A9%3F%23")
        let page = FolderPage.render(
            path: ["<x>"], entries: [.init(name: "f<1>", isFolder: false, size: 3, modified: 0)], uploads: false)
        #expect(
            page.contains("<title>/&lt;x&gt;/</title>") && page.contains(">f&lt;1&gt;</a>") && !page.contains("<script")
        )
    }

    @Test("upload admission: sizes from the head, the limit, and the IETF limit header")
    func admission() throws {
        let folder = try TempDirectory(prefix: "resumectl-admission")
        try Data("x".utf8).write(to: URL(fileURLWithPath: folder.path("there.bin")))
        let admission = UploadAdmission(root: folder.path, maxUploadSize: 1000, overwrite: false, slots: nil)
        func head(_ fields: [(String, String)]) -> HTTPRequestHeadFixture { HTTPRequestHeadFixture(fields) }
        #expect(admission.check(head([("Content-Length", "1000")]).value, components: ["new.bin"]) == nil)
        let tooBig = admission.check(head([("Content-Length", "1001")]).value, components: ["new.bin"])
        #expect(tooBig?.status.code == 413 && tooBig?.headers.isEmpty == true)
        let draft = admission.check(
            head([("Upload-Draft-Interop-Version", "6"), ("Upload-Length", "5000"), ("Content-Length", "10")]).value,
            components: ["new.bin"])
        #expect(draft?.status.code == 413 && draft?.headers.first?.1 == "max-size=1000")
        let append = admission.check(
            head([("Upload-Offset", "900"), ("Content-Length", "200")]).value, components: nil)
        #expect(append?.status.code == 413)
        #expect(admission.check(head([("Content-Length", "1")]).value, components: ["there.bin"])?.status.code == 409)
        #expect(
            FieldValue.integer("12") == 12 && FieldValue.integer("-1") == nil
                && FieldValue.integer("1e3") == nil)
    }

    @Test(
        """
        the S3 store's CompleteMultipartUpload body: parts in order with their ETags and, for an upload created with \
        CRC32C, each part's ChecksumCRC32C as listed
        """
    )
    func s3CompletionBody() {
        let parts = [
            ListedPart(number: 2, size: 3, etag: "\"e2\"", checksums: ["CRC32C": "Bbbb=="]),
            ListedPart(number: 1, size: 5 << 20, etag: "\"e1\"", checksums: ["CRC32C": "Aaaa==", "CRC32": "x"]),
        ]
        let ns = "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        #expect(
            S3UploadStore.completion(parts, checksum: "CRC32C") == ns
                + "<Part><PartNumber>1</PartNumber><ETag>&quot;e1&quot;</ETag>"
                + "<ChecksumCRC32C>Aaaa==</ChecksumCRC32C></Part>"
                + "<Part><PartNumber>2</PartNumber><ETag>&quot;e2&quot;</ETag>"
                + "<ChecksumCRC32C>Bbbb==</ChecksumCRC32C></Part>"
                + "</CompleteMultipartUpload>")
        // An upload an earlier release created without a checksum: none is listed, none may be sent.
        #expect(
            S3UploadStore.completion(parts, checksum: nil) == ns
                + "<Part><PartNumber>1</PartNumber><ETag>&quot;e1&quot;</ETag></Part>"
                + "<Part><PartNumber>2</PartNumber><ETag>&quot;e2&quot;</ETag></Part></CompleteMultipartUpload>")
    }
}

/// A request head with the given fields, for the admission rules.
struct HTTPRequestHeadFixture {
    let value: HTTPRequestHead
    init(_ fields: [(String, String)]) {
        value = HTTPRequestHead(version: .http1_1, method: .PUT, uri: "/x", headers: HTTPHeaders(fields))
    }
}
