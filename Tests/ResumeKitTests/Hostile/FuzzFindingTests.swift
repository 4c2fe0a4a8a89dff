import Foundation
import Testing
@testable import ResumeKit
import ResumeMarkup

/// Every input a fuzz target (Fuzz/, `make fuzz`) found, replayed through the property it broke.
/// The inputs are kept as found under Fixtures/fuzz/<target>/, minimized ones beside them.
@Suite struct FuzzFindingTests {
    static func inputs(_ target: String) -> [(String, [UInt8])] {
        guard let dir = Bundle.module.url(forResource: "Fixtures/fuzz/\(target)", withExtension: nil),
            let names = try? FileManager.default.contentsOfDirectory(atPath: dir.path)
        else { return [] }
        return names.sorted().compactMap { name in
            (try? Data(contentsOf: dir.appendingPathComponent(name))).map { (name, Array($0)) }
        }
    }

    /// FuzzTus's input: the first line is a file name, the rest header lines of an OPTIONS answer.
    static func tusHead(_ bytes: [UInt8]) -> ResponseHead? {
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        var parser = ResponseHeadParser()
        _ = parser.feed(line: "HTTP/1.1 204 No Content\r\n")
        for line in lines.dropFirst() {
            if let head = parser.feed(line: line + "\r\n") { return head }  // an empty line ends the head
        }
        return parser.feed(line: "\r\n")
    }

    /// `Tus-Max-Size: -1` was read as a limit of -1 bytes, so every file was "too large".
    @Test func tusMaxSizeIsNeverNegative() throws {
        let found = Self.inputs("FuzzTus")
        #expect(!found.isEmpty)
        for (name, bytes) in found {
            let head = try #require(Self.tusHead(bytes), "\(name)")
            if let max = TusCapabilities(head)?.maxSize { #expect(max >= 0, "\(name)") }
        }
    }
}

extension FuzzFindingTests {
    /// A blank line of a CRLF list is "\r": split on whitespace it has no part, and `parts[0]` trapped.
    @Test func listWithCRLFBlankLinesParses() {
        for (name, bytes) in Self.inputs("FuzzDownloadList") {
            let list = DownloadList(parsing: String(decoding: bytes, as: UTF8.self))
            #expect(list.entries.allSatisfy { $0.url.hasPrefix("http") }, "\(name)")
        }
        #expect(
            DownloadList(parsing: "http://h/a\r\n\r\nhttp://h/b\r\n").entries.map(\.url) == [
                "http://h/a", "http://h/b",
            ])
    }

    /// An empty field folded onto the next line kept a leading space.
    @Test func foldedValuesAreTrimmed() {
        for (name, bytes) in Self.inputs("FuzzResponseHead") {
            var parser = ResponseHeadParser()
            for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
            {
                if let head = parser.feed(line: line + "\n") {
                    for field in head.headers.fields {
                        #expect(field.value.trimmingSpaces() == field.value, "\(name): \(field)")
                    }
                }
            }
        }
        var parser = ResponseHeadParser()
        var head: ResponseHead?
        for line in ["HTTP/1.1 200 OK", "ETag:", " \"abc\"", ""] { head = parser.feed(line: line + "\r\n") ?? head }
        #expect(head?.headers["ETag"] == "\"abc\"")
    }

    /// RFC 9651 Dates and Display Strings trapped in the library's deprecated `bareItem` (a `try!`).
    @Test(arguments: ["@00", "@1", "%\"x\"", "a=@1, b=%\"y\"", "?1;p=@5"])
    func newStructuredFieldTypesAreNotATrap(value: String) {
        #expect(StructuredField.boolean(value) == (value == "?1;p=@5" ? true : nil))
        #expect(StructuredField.integer(value) == nil)
        _ = StructuredField.integerDictionary(value)
        _ = StructuredField.byteSequenceDictionary(value)
        for (_, bytes) in Self.inputs("FuzzStructuredFields") {
            _ = StructuredField.integer(String(decoding: bytes, as: UTF8.self))
        }
    }

    /// A ListParts page naming a part twice is refused, not trusted to skip the part.
    @Test func s3PartListedTwiceIsRefused() {
        let found = Self.inputs("FuzzS3XML")
        #expect(found.count >= 2)
        for (name, bytes) in found {
            #expect(throws: TransferError.self, "\(name)") { try S3Responses().parts(bytes) }
        }
    }
}

extension FuzzFindingTests {
    /// `HTTP/1.1 -02 …` gave status -2: `Int` takes signs. A status is three digits or nothing (0).
    @Test func statusIsThreeDigits() {
        for (name, bytes) in Self.inputs("FuzzResponseHead") {
            var parser = ResponseHeadParser()
            for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
            {
                if let head = parser.feed(line: line + "\n") {
                    #expect((0...999).contains(head.status), "\(name): \(head.status)")
                }
            }
        }
        for (line, status) in [
            ("HTTP/1.1 -02 x", 0), ("HTTP/1.1 +200 OK", 0), ("HTTP/1.1 2000 x", 0), ("HTTP/1.1 206 Partial", 206),
        ] {
            #expect(ResponseHeadParser.parseStatusLine(Substring(line)).status == status, "\(line)")
        }
    }
}

extension FuzzFindingTests {
    /// A `Retry-After` date in the year 1111111134994 overflowed the seconds since 1970 (a trap): a year
    /// is four digits, and anything else is no date.
    @Test func retryAfterWithAHugeYearIsNoDate() {
        let found = Self.inputs("FuzzContentRange")
        #expect(!found.isEmpty)
        for (name, bytes) in found {
            let value = String(decoding: bytes, as: UTF8.self)
            if let delay = RetryPolicy.retryAfter(value, now: 1_800_000_000) { #expect(delay.isFinite, "\(name)") }
        }
        #expect(HTTPDate.parse("Sun, 06 Nov 99999999999999 08:49:37 GMT") == nil)
        #expect(HTTPDate.parse("Sun, 06 Nov 9999 08:49:37 GMT") != nil)
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == 784_111_777)
    }
}

extension FuzzFindingTests {
    /// A token that loads writes back as one that loads equal: a time the ISO 8601 reader took with a
    /// fraction of a second ("10:05:0.6-11-105:00Z") lost it when written, and loaded as another token.
    @Test func loadedTokensReEncodeEqual() throws {
        let found = Self.inputs("FuzzToken")
        #expect(!found.isEmpty)
        for (name, bytes) in found {
            guard let token = try? TokenStore.decode(Data(bytes), path: name) else { continue }
            let again = try TokenStore.decode(Data(TokenStore.json(token).utf8), path: name)
            #expect(again == token, "\(name): \(TokenStore.json(token)) vs \(TokenStore.json(again))")
        }
    }
}
