import Foundation
import Testing
@testable import ResumeKit
import ResumeMarkup

/// The folder walker over scripted listings: only down and only inside, each refusal a line, every folder
/// read once, the limits kept; and the listing formats it reads (nginx's and serve's JSON, HTML pages).
@Suite struct FolderWalkTests {
    static let root = "http://h.test:8080/pub/"

    /// Walks `pages` (URL → HTML body, or JSON when it starts with `[`) from `root`, counting the reads.
    func walk(_ pages: [String: String], depth: Int? = nil, include: [String] = [], exclude: [String] = []) throws -> (
        FolderWalk, [String]
    ) {
        var read: [String] = []
        let walk = try FolderWalk(root: Self.root, depth: depth, include: include, exclude: exclude, html: HTMLLinks())
        {
            url throws(TransferError) in
            read.append(url)
            guard let body = pages[url] else { throw TransferError(.failed, "404 \(url)") }
            return (Array(body.utf8), body.hasPrefix("[") ? "application/json" : "text/html")
        }
        return (walk, read)
    }

    @Test func nginxHTMLWithSubfoldersKeepsDecodedPathsAndSizes() throws {
        let (w, read) = try walk([
            Self.root: """
            <html><body><h1>Index of /pub/</h1><hr><pre><a href="../">../</a>
            <a href="sub/">sub/</a>          27-Nov-2026 11:37      -
            <a href="a%20b%20%231%25.bin">a b #1%.bin</a>      27-Nov-2026 11:37     5000
            </pre></body></html>
            """,
            Self.root + "sub/": """
            <pre><a href="../">../</a>
            <a href="z%C3%A9+.dat">zé+.dat</a>   27-Nov-2026 11:37     3
            <a href="/pub/sub/">itself</a></pre>
            """,
        ])
        #expect(w.files.map(\.relative) == ["a b #1%.bin", "sub/zé+.dat"])
        #expect(w.files.map(\.url) == [Self.root + "a%20b%20%231%25.bin", Self.root + "sub/z%C3%A9+.dat"])
        #expect(w.files.map(\.size) == [5000, 3])
        #expect(w.files[0].stamp == "27-Nov-2026 11:37 5000")
        #expect(read == [Self.root, Self.root + "sub/"], "each folder read once")
        #expect(w.leftOut == ["http://h.test:8080/: skipped, outside \(Self.root)"])
    }

    @Test func jsonListingsOfNginxAndServe() throws {
        let (w, _) = try walk([
            Self.root: """
            [{"name":"d","type":"directory","mtime":"Fri, 27 Nov 2026 10:00:00 GMT"},
             {"name":"x y.bin","type":"file","mtime":"Fri, 27 Nov 2026 10:00:00 GMT","size":7,"etag":"\\"e1\\""}]
            """,
            Self.root + "d/":
                #"[{"name":"../evil","type":"file","size":1},{"name":"..","type":"directory"},"#
                + #"{"name":"ok","type":"file","size":2}]"#,
        ])
        #expect(w.files.map(\.relative) == ["x y.bin", "d/ok"])
        #expect(w.files[0].url == Self.root + "x%20y.bin" && w.files[0].size == 7 && w.files[0].mtime == 1_795_773_600)
        #expect(w.files[0].stamp.contains("\"e1\""))
        // A name with a slash is encoded into one segment, then refused once decoded; `..` resolves to the root, read
        // already.
        #expect(
            w.leftOut.count == 1 && w.leftOut[0].contains("%2F")
                && w.leftOut[0].hasSuffix("its name would leave the folder"))
    }

    @Test func hostileLinksAreLeftOutWithALineEach() throws {
        let (w, read) = try walk([
            Self.root: """
            <a href="?C=N;O=D">Name</a> <a href="../">Parent</a> <a href="/etc/passwd">abs</a>
            <a href="http://evil.test:8080/pub/x">other host</a> <a href="https://h.test:8080/pub/x">other scheme</a>
            <a href="http://h.test:9999/pub/x">other port</a> <a href="%2e%2e/%2e%2e/etc/passwd">encoded dots</a>
            <a href="a%2Fb">encoded slash</a> <a href="a%5Cb">backslash</a> <a href="a%00b">nul</a>
            <a href="f.bin#frag">fragment</a> <a href="f.bin?x=1">query</a> <a href="f.bin">file</a> <a \
            href="loop/">loop</a>
            <a href="./">self</a> <a>no href</a>
            """,
            Self.root + "loop/": #"<a href="../">up</a> <a href="../loop/">me</a> <a href="/pub/">root</a>"#,
        ])
        #expect(w.files.map(\.relative) == ["f.bin"])
        #expect(read == [Self.root, Self.root + "loop/"])
        #expect(w.leftOut.count == 12, "\(w.leftOut)")
        #expect(w.leftOut.filter { $0.hasSuffix("a link with a query or fragment") }.count == 3)
        #expect(w.leftOut.filter { $0.hasSuffix("on another host") }.count == 3)
        #expect(w.leftOut.filter { $0.contains("skipped, outside") }.count == 2)
        #expect(w.leftOut.filter { $0.hasSuffix("its name would leave the folder") }.count == 4)
    }

    @Test func depthIncludeAndExclude() throws {
        let pages = [
            Self.root: #"<a href="a.iso">a</a><a href="b.txt">b</a><a href="s/">s</a>"#,
            Self.root + "s/": #"<a href="c.iso">c</a><a href="t/">t</a>"#,
            Self.root + "s/t/": #"<a href="d.iso">d</a>"#,
        ]
        #expect(try walk(pages).0.files.map(\.relative) == ["a.iso", "b.txt", "s/c.iso", "s/t/d.iso"])
        #expect(try walk(pages, depth: 0).0.files.map(\.relative) == ["a.iso", "b.txt"])
        #expect(try walk(pages, depth: 1).1.count == 2)
        #expect(
            try walk(pages, include: ["*.iso"], exclude: ["s/t/*"]).0.files.map(\.relative) == ["a.iso", "s/c.iso"])
    }

    @Test func moreThanTheFileLimitIs65() throws {
        let links = (0...FolderWalk.maxFiles).map { "<a href=\"f\($0)\">f</a>" }.joined()
        do {
            _ = try walk([Self.root: links])
            Issue.record("no error")
        } catch let error as TransferError {
            #expect(
                error.code == .badListing && error.exitStatus == 65 && error.message.contains("more than 100000 files"))
        }
    }

    @Test func aListingThatIsNoneIs65() throws {
        #expect(throws: TransferError.self) {
            try FolderListing.entries(Array("[{\"x\":1}]".utf8), contentType: "application/json", html: nil)
        }
        #expect(
            try FolderListing.entries(Array("plain text, no links".utf8), contentType: "text/plain", html: HTMLLinks())
                .isEmpty)
    }
}
