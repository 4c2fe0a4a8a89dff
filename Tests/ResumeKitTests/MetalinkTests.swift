import Testing
import ResumeKit
import ResumeMarkup

private let h256 = String(repeating: "a", count: 64)
private let h384 = String(repeating: "b", count: 96)
private let h512 = String(repeating: "c", count: 128)
private let h1 = String(repeating: "d", count: 40)

/// A Metalink 4 document (RFC 5854) of `body`: one or more `<file>` elements.
private func document(_ body: String) -> [UInt8] {
    Array(
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <metalink xmlns="urn:ietf:params:xml:ns:metalink">
        \(body)
        </metalink>
        """.utf8)
}

/// A `<file>` with a SHA-256 and one URL unless `inner` is given.
private func file(
    _ name: String = "f.bin", size: String? = "3",
    _ inner: String = "<hash type=\"sha-256\">\(h256)</hash><url>http://a.test/f.bin</url>"
) -> String {
    "<file name=\"\(name)\">\(size.map { "<size>\($0)</size>" } ?? "")\(inner)</file>"
}

/// The kind of error `bytes` are refused with, nil when they are read.
private func refusal(_ bytes: [UInt8], requireHashes: Bool = true) -> MetalinkError? {
    do {
        _ = try Metalink.parse(bytes, requireHashes: requireHashes)
        return nil
    } catch {
        return error
    }
}

/// ResumeMarkup's Metalink reader: what a published `.meta4` gives, and every hostile document refused with
/// one line of its own kind (``MetalinkError``).
@Suite struct MetalinkTests {
    @Test func aFileGivesItsNameSizeAndWholeHashesStrongestFirst() throws {
        let doc = document(
            file(
                "images/disk.img", size: " 1048576 ",
                """
                <hash type="sha-1">\(h1)</hash><hash type="SHA-256">\(h256.uppercased())</hash>
                <hash type="md5">0123456789abcdef0123456789abcdef</hash><hash type="sha-512">\(h512)</hash>
                <hash type="sha-256"> \(h256) </hash>
                <x:hash xmlns:x="urn:example:other" type="sha-384">\(h384)</x:hash>
                <url>https://a.test/disk.img</url>
                """))
        let files = try Metalink.parse(doc).files
        #expect(files.count == 1)
        let f = try #require(files.first)
        #expect(f.name == "images/disk.img")
        #expect(f.size == 1_048_576)
        // SHA-1 is dropped beside stronger ones, MD5 is no hash, another namespace's element is an extension.
        #expect(f.hashes == [.init(algorithm: "sha-512", hex: h512), .init(algorithm: "sha-256", hex: h256)])
        #expect(f.hex("sha-256") == h256 && f.hex("sha-384") == nil)
        #expect(f.isVerifiable && !f.usesSHA1 && f.pieces == nil)
    }

    @Test func sha1IsTakenOnlyWhenNothingStrongerIsGivenAndSaysSo() throws {
        let alone = try Metalink.parse(
            document(file("f.bin", "<hash type=\"sha-1\">\(h1)</hash><url>http://a.test/f</url>"))
        ).files[0]
        #expect(alone.hashes == [.init(algorithm: "sha-1", hex: h1)])
        #expect(alone.isVerifiable && alone.usesSHA1, "accepted, with the warning usesSHA1 reports")

        let sha1Pieces = try Metalink.parse(
            document(
                file(
                    "f.bin", size: "3",
                    "<pieces type=\"sha-1\" length=\"2\"><hash>\(h1)</hash><hash>\(h1)</hash></pieces>"
                        + "<url>http://a.test/f</url>"))
        ).files[0]
        #expect(sha1Pieces.hashes.isEmpty && sha1Pieces.pieces?.algorithm == "sha-1" && sha1Pieces.usesSHA1)
    }

    @Test func piecesKeepTheirLengthTypeAndHashesInOrderTheStrongestChosen() throws {
        let hashes = ["1", "2", "3"].map { String(repeating: $0, count: 64) }
        let inner = """
            <pieces type="sha-1" length="4"><hash>\(h1)</hash><hash>\(h1)</hash><hash>\(h1)</hash></pieces>
            <pieces type="sha-256" length="4">\(hashes.map { "<hash>\($0)</hash>" }.joined())</pieces>
            <pieces type="md5" length="1"><hash>x</hash></pieces>
            <url>http://a.test/f</url>
            """
        let f = try Metalink.parse(document(file("f.bin", size: "10", inner))).files[0]
        #expect(f.pieces == Metalink.Pieces(length: 4, algorithm: "sha-256", hashes: hashes))
        #expect(f.hashes.isEmpty && f.isVerifiable && !f.usesSHA1)

        // Ten bytes in pieces of four are three pieces, not two.
        let short = "<pieces type=\"sha-256\" length=\"4\"><hash>\(h256)</hash><hash>\(h256)</hash></pieces>"
        #expect(refusal(document(file("f.bin", size: "10", short + "<url>http://a.test/f</url>")))?.kind == .pieces)
        let noLength = "<pieces type=\"sha-256\"><hash>\(h256)</hash></pieces><url>http://a.test/f</url>"
        #expect(refusal(document(file("f.bin", size: "10", noLength)))?.kind == .pieces)
    }

    @Test func urlsComeByPriorityWithTheirLocationEqualOnesInDocumentOrder() throws {
        let inner = """
            <hash type="sha-256">\(h256)</hash>
            <url priority="3">http://c.test/f</url>
            <url>http://none.test/f</url>
            <url priority="1" location="DE">http://a.test/f</url>
            <url priority="0">http://zero.test/f</url>
            <url priority="1">http://b.test/f</url>
            <url priority="2"> </url>
            <metaurl mediatype="torrent">http://t.test/f.torrent</metaurl>
            """
        let urls = try Metalink.parse(document(file("f.bin", inner))).files[0].urls
        #expect(
            urls == [
                .init(url: "http://a.test/f", priority: 1, location: "de"),
                .init(url: "http://b.test/f", priority: 1),
                .init(url: "http://c.test/f", priority: 3),
                // No priority, or one outside 1...999999: last, in document order.
                .init(url: "http://none.test/f"),
                .init(url: "http://zero.test/f"),
            ])
    }

    @Test(arguments: ["../up.bin", "a/../../up.bin", "a/..", "/etc/passwd", "", "a//b", "./a", "a\\b", "a\u{1}b"])
    func aNameThatIsNotAPlainRelativePathIsRefused(name: String) throws {
        let error = try #require(refusal(document(file(name.replacingOccurrences(of: "\u{1}", with: "&#1;")))))
        #expect(error.kind == .name || error.kind == .notXML, "\(error)")
        // A control character is no XML 1.0 character: the parser refuses it before the name check could.
        if !name.contains("\u{1}") { #expect(error.kind == .name, "\(error)") }
    }

    @Test func aClimbingNameIsSaidInOneLine() throws {
        let error = try #require(refusal(document(file("../../etc/cron.d/x"))))
        #expect(error.kind == .name)
        #expect(error.description.contains("../../etc/cron.d/x") && error.description.contains(".."))
        #expect(!error.description.contains("\n"))
    }

    @Test func aMillionURLsAreRefusedAndTheLimitIsAThousand() throws {
        let url = "<url>h:</url>"
        let hash = "<hash type=\"sha-256\">\(h256)</hash>"
        let million = document(file("f.bin", hash + String(repeating: url, count: 1_000_000)))
        #expect(million.count < Metalink.maxBytes, "under the size limit: the URL count is what refuses it")
        let error = try #require(refusal(million))
        #expect(error.kind == .urlCount && error.description == "f.bin: more than 1000 <url> elements", "\(error)")
        let over = document(file("f.bin", hash + String(repeating: url, count: Metalink.maxURLs + 1)))
        #expect(refusal(over)?.kind == .urlCount)
        // The reading stops at the URL one over: what follows it is never read. Here that is bytes that are no XML
        // (a Metalink within the limit is refused for them), past what libxml2 reads ahead: the URL's next sibling
        // (`<pad/>`), which it parses before it gives the URL's end, then 64 KiB.
        func broken(_ bytes: [UInt8]) -> [UInt8] {
            let tail = "<pad/>" + String(repeating: " ", count: 64 << 10) + "<<< no XML"
            return Array(String(decoding: bytes, as: UTF8.self).replacingOccurrences(of: "</file>", with: tail).utf8)
        }
        #expect(refusal(broken(over))?.kind == .urlCount)
        let limit = document(file("f.bin", hash + String(repeating: url, count: Metalink.maxURLs)))
        #expect(try Metalink.parse(limit).files[0].urls.count == Metalink.maxURLs)
        #expect(refusal(broken(limit))?.kind == .notXML)
    }

    @Test(arguments: ["1099511627776", "1099511627776000", "99999999999999999999", "-1", "12abc", "0x10", ""])
    func aSizeThatIsNoNumberOrOverTheLimitIsRefused(size: String) throws {
        let error = try #require(refusal(document(file(size: size))))
        #expect(error.kind == .size, "\(error)")
    }

    @Test func theLargestSizeAndAnEmptyFileAreRead() throws {
        let max = try Metalink.parse(document(file(size: String(Metalink.maxSize)))).files[0]
        #expect(max.size == 512 << 30)
        #expect(try Metalink.parse(document(file(size: "0"))).files[0].size == 0)
        #expect(try Metalink.parse(document(file(size: nil))).files[0].size == nil)
    }

    @Test func aFileWithoutAHashIsRefusedUnlessNoneIsRequired() throws {
        let inner = "<hash type=\"md5\">0123456789abcdef0123456789abcdef</hash><url>http://a.test/f</url>"
        let doc = document(file("f.bin", inner))
        let error = try #require(refusal(doc))
        #expect(error.kind == .noHash && error.description.hasPrefix("f.bin: "), "\(error)")
        let read = try Metalink.parse(doc, requireHashes: false).files[0]
        #expect(!read.isVerifiable && read.hashes.isEmpty)
    }

    @Test(arguments: [
        "<hash type=\"sha-256\">\(h256.dropLast())</hash>",
        "<hash type=\"sha-256\">\(h256.dropLast())g</hash>",
        "<hash type=\"sha-256\">\(h256)</hash><hash type=\"sha-256\">\(String(repeating: "e", count: 64))</hash>",
    ])
    func aMalformedOrContradictedHashIsRefused(hash: String) throws {
        #expect(refusal(document(file("f.bin", hash + "<url>http://a.test/f</url>")))?.kind == .hash)
    }

    @Test func aDoctypeAndItsEntitiesAreRefusedBeforeTheParserReadsThem() throws {
        let external = """
            <?xml version="1.0"?>
            <!DOCTYPE metalink [<!ENTITY x SYSTEM "file:///etc/passwd">]>
            <metalink xmlns="urn:ietf:params:xml:ns:metalink">\(file("&x;"))</metalink>
            """
        #expect(refusal(Array(external.utf8))?.kind == .doctype)
        let billion = """
            <!DOCTYPE m [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>
            <metalink xmlns="urn:ietf:params:xml:ns:metalink">\(file("&b;"))</metalink>
            """
        #expect(refusal(Array(billion.utf8))?.kind == .doctype)
        // Without a declaration an entity is undeclared: not well-formed.
        #expect(refusal(document(file("&x;")))?.kind == .notXML)
    }

    @Test func bytesThatAreNoMetalink4AreRefused() throws {
        #expect(refusal([])?.kind == .notXML)
        #expect(refusal(Array("not xml at all".utf8))?.kind == .notXML)
        #expect(refusal(Array("<metalink xmlns=\"urn:ietf:params:xml:ns:metalink\">".utf8))?.kind == .notXML)
        #expect(refusal(document(file()) + [0])?.kind == .notXML)
        #expect(
            refusal(Array("<metalink version=\"3.0\" xmlns=\"http://www.metalinker.org/\"/>".utf8))?.kind
                == .notMetalink)
        #expect(refusal(Array("<metalink>\(file())</metalink>".utf8))?.kind == .notMetalink)
        #expect(refusal([UInt8](repeating: 0x20, count: Metalink.maxBytes + 1))?.kind == .tooLarge)
    }

    @Test func noFileOrTwoOfOneNameAreRefusedTwoOfTwoNamesRead() throws {
        #expect(refusal(document(""))?.kind == .fileCount)
        let twice = try #require(refusal(document(file("f.bin") + file("f.bin"))))
        #expect(twice.kind == .name && twice.description.contains("twice"), "\(twice)")
        // The reader gives both; `download FILE.meta4` asks for a Metalink of one file.
        let two = try Metalink.parse(document(file("a.bin") + file("b.bin"))).files
        #expect(two.map(\.name) == ["a.bin", "b.bin"])
    }

    @Test(arguments: ["", "<url> </url>", "<metaurl mediatype=\"torrent\">http://t.test/f.torrent</metaurl>"])
    func aFileWithNoURLIsRefused(urls: String) throws {
        let error = try #require(refusal(document(file("f.bin", "<hash type=\"sha-256\">\(h256)</hash>" + urls))))
        #expect(error.kind == .urlCount && error.description == "f.bin: no URL", "\(error)")
    }
}
