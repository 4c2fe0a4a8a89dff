import ArgumentParser
import Glibc
import Testing
@testable import ResumeCLI
@testable import ResumeKit

/// What a parsed command line hands to ResumeKit: every command goes through ArgumentParser.
@Suite struct CommandLineTests {
    /// A password in the URL is a `-u` password for this run: the URL the token keeps has none.
    @Test func aURLPasswordBecomesTheRunsLogin() throws {
        let download = try Download.parse(["http://al%40ice:p%3Ass@h/f", "-o", "f", "-H", "X-Api-Key: k"])
        let (client, url) = download.options.client(taking: try #require(download.url))
        #expect(url == "http://al%40ice@h/f")
        #expect(client.options.transport.credentials.user == "al@ice")
        #expect(client.options.transport.credentials.password == "p:ss")
        #expect(download.options.header == ["X-Api-Key: k"])
    }

    @Test func dashUWinsOverTheURLsLogin() throws {
        let upload = try Upload.parse(["f", "http://alice:one@h/up/", "-u", "bob:two"])
        let (client, url) = upload.options.client(taking: upload.url)
        #expect(url == "http://alice@h/up/")
        #expect(
            client.options.transport.credentials.user == "bob" && client.options.transport.credentials.password == "two"
        )
    }

    @Test func aURLWithoutLoginIsLeftAlone() throws {
        let download = try Download.parse(["https://h/a@b", "--netrc"])
        let (client, url) = download.options.client(taking: try #require(download.url))
        #expect(url == "https://h/a@b" && client.options.transport.credentials.user == nil)
    }

    /// A token's URL that names a user, and no `-u` nor netrc: without a terminal, a usage error (64).
    @Test(.enabled(if: isatty(0) == 0, "stdin is a terminal: the password would be asked for"))
    func resumingAUserURLWithoutTerminalOrLoginIsAUsageError() throws {
        let resume = try Resume.parse(["d-0123456789abcdef"])
        #expect(throws: ExitCode(64)) { try resume.options.client(resuming: "http://alice@h/f") }
        let netrc = try Resume.parse(["d-0123456789abcdef", "--netrc"])
        #expect(throws: Never.self) { try netrc.options.client(resuming: "http://alice@h/f") }
    }
}
