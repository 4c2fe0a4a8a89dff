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
        (["upload", "/tmp", "http://127.0.0.1:9/u"], 66, "not a regular file"),
        (["resume", "d-0000000000000000"], 66, "no token named"),
        (["show", "u-nothing"], 66, "no token named"),
        (["cancel", "d-nothing"], 66, "no token named"),
        (["download", "http://127.0.0.1:9/f", "-o", "/nonexistent-dir/x"], 73, "does not exist"),
        (["frobnicate"], 64, "Unexpected argument"),
    ])
    func badInputExitsWithTheDocumentedStatus(args: [String], status: Int32, message: String) throws {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("cli-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: state) }
        let r = try CLI.run(args + (args.first == "frobnicate" ? [] : ["--state-dir", state]))
        #expect(r.status == status, "stderr: \(r.stderr)")
        #expect(r.stderr.contains(message), "stderr: \(r.stderr)")
        #expect(r.stdout.isEmpty)
    }
}

/// Runs the built `resumectl`.
enum CLI {
    static var binary: String {
        if let path = ProcessInfo.processInfo.environment["RESUMECTL_BIN"] { return path }
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var dir = URL(fileURLWithPath: exe).deletingLastPathComponent()
        while !FileManager.default.fileExists(atPath: dir.appendingPathComponent("resumectl").path), dir.path != "/" {
            dir.deleteLastPathComponent()
        }
        return dir.appendingPathComponent("resumectl").path
    }

    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    static func run(_ args: [String], environment: [String: String] = [:], currentDirectory: String? = nil) throws -> Result {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: binary)
        p.arguments = args
        var env = ProcessInfo.processInfo.environment
        for (k, v) in environment { env[k] = v }
        p.environment = env
        if let currentDirectory { p.currentDirectoryURL = URL(fileURLWithPath: currentDirectory) }
        // Files, not pipes: nothing can block on a full pipe buffer.
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cli-out-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let outURL = dir.appendingPathComponent("stdout")
        let errURL = dir.appendingPathComponent("stderr")
        FileManager.default.createFile(atPath: outURL.path, contents: nil)
        FileManager.default.createFile(atPath: errURL.path, contents: nil)
        p.standardOutput = try FileHandle(forWritingTo: outURL)
        p.standardError = try FileHandle(forWritingTo: errURL)
        p.standardInput = FileHandle.nullDevice
        try p.run()
        p.waitUntilExit()
        return Result(status: p.terminationStatus, stdout: try String(contentsOf: outURL, encoding: .utf8),
            stderr: try String(contentsOf: errURL, encoding: .utf8))
    }
}
