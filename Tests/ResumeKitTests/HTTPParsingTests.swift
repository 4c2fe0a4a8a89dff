import Testing
@testable import ResumeKit

@Suite struct HTTPParsingTests {
    @Test func parserSeparatesInformationalAndFinalHeads() {
        var p = ResponseHeadParser()
        let lines = [
            "HTTP/1.1 104 Upload Resumption Supported\r\n", "Upload-Draft-Interop-Version: 6\r\n",
            "Location: http://h/resumable_upload/1-2\r\n", "\r\n",
            "HTTP/1.1 201 Created\r\n", "Upload-Offset: 10\r\n", "\r\n",
        ]
        let heads = lines.compactMap { p.feed(line: $0) }
        #expect(heads.map(\.status) == [104, 201])
        #expect(heads[0].headers["location"] == "http://h/resumable_upload/1-2")
        #expect(heads[1].reason == "Created")
        #expect(heads[1].headers["Upload-Offset"] == "10")
    }

    @Test(arguments: [
        ("bytes 0-9/100", ContentRange(range: 0...9, completeLength: 100)),
        ("bytes 90-99/*", ContentRange(range: 90...99, completeLength: nil)),
        ("bytes */100", ContentRange(range: nil, completeLength: 100)),
    ])
    func contentRangeParses(text: String, expected: ContentRange) {
        #expect(ContentRange(text) == expected)
    }

    @Test(arguments: ["bytes 9-0/100", "bytes 0-100/100", "items 0-1/2", "bytes */*", "bytes 0-9", "bytes a-b/c"])
    func contentRangeRejectsNonsense(text: String) {
        #expect(ContentRange(text) == nil)
    }

    @Test func entityTags() {
        #expect(EntityTag("\"a\"")?.isWeak == false)
        #expect(EntityTag("W/\"a\"")?.isWeak == true)
        #expect(EntityTag("a") == nil)
        #expect(EntityTag("\"a\"")!.stronglyMatches(EntityTag("\"a\"")!))
        #expect(!EntityTag("W/\"a\"")!.stronglyMatches(EntityTag("W/\"a\"")!))
    }

    @Test func structuredFields() {
        #expect(StructuredField.boolean("?1") == true)
        #expect(StructuredField.boolean("?0") == false)
        #expect(StructuredField.boolean("yes") == nil)
        #expect(StructuredField.integer("42") == 42)
        #expect(StructuredField.integer("4.2") == nil)
        #expect(
            StructuredField.integerDictionary("max-size=100, min-size=0, expires=3600") == [
                "max-size": 100, "min-size": 0, "expires": 3600,
            ])
    }

    @Test func headerLinesRejectBadInput() throws {
        #expect(throws: TransferError.self) { try HeaderLines.parse(["no colon"]) }
        #expect(throws: TransferError.self) { try HeaderLines.parse([": empty name"]) }
        #expect(try HeaderLines.parse(["X-A: 1", "Expect:"]).fields.map(\.value) == ["1", ""])
    }

    @Test func headerMergeOverridesByName() {
        #expect(HeaderLines.merge(stored: ["X-A: 1", "X-B: 2"], given: ["x-a: 3"]) == ["X-B: 2", "x-a: 3"])
    }

    @Test(arguments: ["ftp://h/f", "file:///etc/passwd", "http://", "example.com/x", "http:// h/x"])
    func urlCheckRefuses(url: String) {
        #expect(throws: TransferError.self) { try URLCheck.validate(url) }
    }

    @Test func defaultOutputName() {
        #expect(OutputPath.defaultName(url: "http://h/a/b%20c.iso?x=1") == "b c.iso")
        #expect(OutputPath.defaultName(url: "http://h/") == "index.html")
        #expect(OutputPath.defaultName(url: "http://h") == "index.html")
        #expect(OutputPath.defaultName(url: "http://h/a/..") == "index.html")
        #expect(OutputPath.defaultName(url: "http://h/a%2F..%2Fx") == "a_.._x")
    }
}

@Suite struct HTTPDateTests {
    @Test(arguments: [
        ("Sun, 06 Nov 1994 08:49:37 GMT", Int64(784_111_777)),
        ("Sunday, 06-Nov-94 08:49:37 GMT", 784_111_777),
        ("Sun Nov  6 08:49:37 1994", 784_111_777),
        ("Thu, 01 Jan 1970 00:00:00 GMT", 0),
        ("Sun, 22 Nov 2026 02:00:00 GMT", 1_795_312_800),
        ("Tue, 29 Feb 2028 12:00:00 GMT", 1_835_438_400),
    ])
    func parsesTheThreeFormats(text: String, seconds: Int64) {
        #expect(HTTPDate.parse(text) == seconds)
    }

    @Test(arguments: [
        "", "yesterday", "Sun, 06 Nov 1994 25:49:37 GMT", "Sun, 06 Foo 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 08:49:37 CET",
    ])
    func rejectsNonsense(text: String) {
        #expect(HTTPDate.parse(text) == nil)
    }
}

@Suite struct OutputPathTests {
    @Test(arguments: [
        ("/a/./b//c", "/a/b/c"), ("/a/b/../c", "/a/c"), ("/../x", "/x"), ("/", "/"), ("/a/b/", "/a/b"),
        ("/a/b/.", "/a/b"), ("/a/..", "/"), ("/a/.../b", "/a/.../b"), ("/a/..b/.c", "/a/..b/.c"), ("/a/b", "/a/b"),
        ("a/b", "/a/b"),
    ])
    func normalisesOnTheTextAlone(path: String, expected: String) {
        #expect(OutputPath.lexicallyNormalized(path) == expected)
    }
}
