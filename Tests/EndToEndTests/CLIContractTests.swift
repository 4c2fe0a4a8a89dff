import Foundation
import Testing

/// The built binary's contract for bad input: one stderr line, the documented exit code, nothing on stdout.
@Suite struct CLIContractTests {
    @Test(arguments: [
        (["download", "ftp://example.com/f"], Int32(64), "unsupported scheme"),
        (["download", "file:///etc/passwd"], 64, "unsupported scheme"),
        (["download", "not a url"], 64, "not an http or https URL"),
        (["download", "http://127.0.0.1:9/f", "--checksum", "md5=00"], 64, "sha256=HEX"),
        (["download", "http://127.0.0.1:9/f", "--retries", "many"], 64, "retries"),
        (["upload", "/nonexistent/file", "http://127.0.0.1:9/u"], 66, "cannot read /nonexistent/file"),
        (["upload", "/tmp", "http://127.0.0.1:9/u"], 64, "must end in / to take a folder"),
        (["upload", "/dev/null", "http://127.0.0.1:9/u"], 66, "not a regular file"),
        (["upload", "/etc/hostname", "ftp://127.0.0.1:9/u"], 64, "unsupported scheme"),
        (["upload", "/etc/hostname", "http://127.0.0.1:9/u", "--interop-version", "4"], 64, "interop-version"),
        (["download", "-i", "/nonexistent/list"], 66, "cannot read /nonexistent/list"),
        (["download"], 64, "give a URL, or -i LIST"),
        (["download", "http://127.0.0.1:9/f", "--checkpoint-interval", "-1"], 64, "checkpoint-interval"),
        (["pause", "d-0000000000000000"], 66, "no token named"),
        (["serve", "/nonexistent-folder"], 66, "directory not found"),
        (["serve", "--port", "70000"], 64, "--port must be between 0 and 65535"),
        (["resume", "d-0000000000000000"], 66, "no token named"),
        (["show", "u-nothing"], 66, "no token named"),
        (["cancel", "d-nothing"], 66, "no token named"),
        (["download", "http://127.0.0.1:9/f", "-o", "/nonexistent-dir/x"], 73, "does not exist"),
        (["frobnicate"], 64, "Unexpected argument"),
    ])
    func badInputExitsWithTheDocumentedStatus(args: [String], status: Int32, message: String) async throws {
        let h = try Workspace()
        let takesStateDir = args.first != "frobnicate" && args.first != "serve"
        let r = takesStateDir ? try await h.run(args) : try await runProcess(resumectlBinary, args)
        #expect(r.status == status, "stderr: \(r.stderr)")
        #expect(r.stderr.contains(message), "stderr: \(r.stderr)")
        #expect(r.stdout.isEmpty)
        #expect(r.stderr.split(separator: "\n").count == 1, "one line: \(r.stderr)")
        #expect(try h.tokens().isEmpty)
    }
}
