import ArgumentParser
import Testing
@testable import ResumeCLI
@testable import ResumeKit

/// `QuickDownload` reads a common download line by hand; every line it accepts must mean to it exactly what it
/// means to ArgumentParser's `Download`, and every line it cannot read exactly is left to ArgumentParser.
@Suite struct QuickDownloadTests {
    static let accepted: [[String]] = [
        ["http://127.0.0.1:8080/f"],
        ["https://example.com/a.iso", "-o", "/data/a.iso"],
        ["-q", "http://h/f", "--output", "out"],
        ["--json", "HTTPS://Example.com/x", "-o", "dir/"],
        ["http://h/f", "--force", "--quiet", "--state-dir", "/tmp/state"],
        ["-H", "Authorization: Bearer x", "--header", "X-A: 1", "http://h/f", "-o", "f"],
        ["http://h/f?x=1&y=-2", "-o", "a b"],
    ]

    @Test(arguments: accepted) func readsAsArgumentParserDoes(_ line: [String]) throws {
        let quick = try #require(QuickDownload(["download"] + line))
        let full = try Download.parse(line)
        #expect(quick.request == (try fullRequest(full)))
        #expect(quick.settings == full.options.settings)
        #expect(full.connections == 1 && full.inputFile == nil && !full.background.detach && !full.background.waitsForNetwork)
        #expect(full.background.startAt == nil && !full.background.detachedChild)
    }

    static let lists: [[String]] = [
        ["-i", "list.txt"],
        ["-i", "list.txt", "-o", "dest", "--parallel", "8"],
        ["-q", "--input-file", "l", "--json", "--state-dir", "/tmp/s", "--parallel", "64"],
        ["--parallel", "1", "-H", "X-A: 1", "-i", "l", "--force", "--output", "d/"],
    ]

    @Test(arguments: lists) func readsAListAsArgumentParserDoes(_ line: [String]) throws {
        let quick = try #require(QuickDownload(["download"] + line))
        let full = try Download.parse(line)
        #expect(quick.inputFile == full.inputFile && quick.url == nil && full.url == nil)
        #expect((quick.parallel ?? 4) == full.parallel)
        #expect(quick.output == full.output && quick.force == full.force)
        #expect(quick.settings == full.options.settings)
        #expect(full.connections == 1 && full.onChange == .restart && full.checksum == nil && !full.background.waitsForNetwork)
    }

    /// What `Download.run` builds for one URL.
    private func fullRequest(_ full: Download) throws -> DownloadRequest {
        DownloadRequest(url: try #require(full.url), outputPath: full.output, headers: full.options.header,
            expectedSHA256: try full.checksum.map(Checksum.parse), onChange: full.onChange, force: full.force, s3: full.s3.options())
    }

    @Test(arguments: [
        [], ["download"], ["upload", "f", "http://h/"], ["download", "http://h/a", "http://h/b"],
        ["download", "s3://bucket/key"], ["download", "ftp://h/f"], ["download", "http//h"],
        ["download", "http://h/f", "-o", "-"], ["download", "http://h/f", "-o"], ["download", "http://h/f", "-o", "a", "-o", "b"],
        ["download", "http://h/f", "--output=a"], ["download", "http://h/f", "-qo", "a"], ["download", "-q", "-q", "http://h/f"],
        ["download", "http://h/f", "--connections", "4"], ["download", "-i", "l", "http://h/f"], ["download", "http://h/f", "--detach"],
        ["download", "http://h/f", "--parallel", "8"], ["download", "-i", "l", "-o", "-"], ["download", "-i", "l", "--parallel", "0"],
        ["download", "-i", "l", "--parallel", "65"], ["download", "-i", "l", "-i", "m"], ["download", "-i", "l", "--connections", "2"],
        ["download", "-i", "l", "--parallel", "8", "--parallel", "8"], ["download", "-i"],
        ["download", "http://h/f", "-H", "no colon"], ["download", "--", "http://h/f"], ["download", "http://h/f", "--bogus"],
        ["download", "http://h/f", "--help"], ["download", "--version"],
    ])
    func leavesEveryOtherLineToArgumentParser(_ arguments: [String]) {
        #expect(QuickDownload(arguments) == nil)
    }
}
