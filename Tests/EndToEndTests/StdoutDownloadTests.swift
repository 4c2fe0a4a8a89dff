import Foundation
import Testing

/// `resumectl download URL -o - | consumer`, with real pipes through `/bin/sh`: the body alone on stdout,
/// cuts resumed within the run, a changed file refused, a reader that goes away obeyed.
@Suite struct StdoutDownloadTests: StreamPipelines {
    static let size = 3_000_000

    @Test func cutsAreResumedIntoThePipe() async throws {
        let w = try Workspace()
        let digest = try makeRandomFile(path: w.path("www/f.bin"), size: Self.size, seed: 31)
        let nginx = try await NginxServer(root: w.path("www"))
        let proxy = try FaultProxy(
            upstreamPort: nginx.port,
            plan: [
                .cutAfterDownstream(bytes: 900_000), .cutAfterDownstream(bytes: 700_000, reset: true),
                .cutAfterDownstream(bytes: 500_000),
            ])
        let (r, status) = try await pipeline(
            w, ["download", proxy.url(for: "f.bin"), "-o", "-", "--retry-delay", "0.05"], into: "sha256sum",
            timeout: .seconds(120))
        #expect(status == 0, "\(r)")
        #expect(r.stdout.hasPrefix(digest), "\(r)")
        // Three resumes, each asking 64 KiB early and comparing them with what was written.
        let log = nginx.accessLog()
        #expect(log.count == 4, "\(log)")
        #expect(log.dropFirst().allSatisfy { $0.hasPrefix("206") }, "\(log)")
        #expect(proxy.bytesDownstream < Self.size + 3 * 65_536 + 3_000, "\(proxy.bytesDownstream)")
        // No token: a pipe cannot be resumed by another process.
        #expect(try w.tokens().isEmpty)
    }

    @Test func aServerIgnoringRangesIsSkippedToWhereThePipeIs() async throws {
        let w = try Workspace()
        let content = randomBytes(count: 2_000_000, seed: 32)
        let server = try await MisbehavingServer(content: content, behaviors: [.ignoresRange])
        let proxy = try FaultProxy(upstreamPort: server.port, plan: [.cutAfterDownstream(bytes: 700_000)])
        let (r, status) = try await pipeline(
            w, ["download", proxy.url(for: "file.bin"), "-o", "-", "--retry-delay", "0.05"], into: "sha256sum",
            timeout: .seconds(120))
        #expect(status == 0, "\(r)")
        #expect(r.stdout.hasPrefix(sha256(content)), "\(r)")
        #expect(server.requestCount == 2)
    }

    @Test func aFileChangedMidStreamIsExit65() async throws {
        let w = try Workspace()
        let first = randomBytes(count: 2_000_000, seed: 33)
        let second = randomBytes(count: 2_000_000, seed: 34)
        // The cut leaves 800 kB in the pipe; the file has changed when the resume asks for more (request 1).
        let server = try await MisbehavingServer(
            content: first,
            behaviors: [
                .contentProvider { $0 == 0 ? first : second }, .cutsEveryResponse(afterBytes: 800_000),
            ])
        let ended = try await startPipeline(
            w, ["download", server.url(), "-o", "-", "--retry-delay", "0.05"], into: "wc -c"
        )
        .wait(timeout: .seconds(60))
        #expect(status(ended) == 65, "\(ended.stderr)")
        #expect(ended.stderr.contains("cannot be taken back"), "\(ended.stderr)")
        #expect(
            ended.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "800000",
            "nothing after the change: \(ended.stdout)")
    }

    @Test func newBytesUnderAnUnchangedValidatorAreExit65() async throws {
        let w = try Workspace()
        let first = randomBytes(count: 2_000_000, seed: 35)
        let second = randomBytes(count: 2_000_000, seed: 36)
        // The resume (request 1) gets other bytes under the first content's validators.
        let server = try await MisbehavingServer(
            content: first,
            behaviors: [
                .lyingValidators, .contentProvider { $0 == 0 ? first : second },
                .cutsEveryResponse(afterBytes: 800_000),
            ])
        let ended = try await startPipeline(
            w, ["download", server.url(), "-o", "-", "--retry-delay", "0.05"], into: "wc -c"
        )
        .wait(timeout: .seconds(60))
        #expect(status(ended) == 65, "\(ended.stderr)")
        #expect(ended.stderr.contains("differ"), "\(ended.stderr)")
        #expect(
            ended.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "800000", "nothing spliced: \(ended.stdout)"
        )
    }

    @Test func aReaderThatGoesAwayEndsItLikeAFilter() async throws {
        let w = try Workspace()
        _ = try makeRandomFile(path: w.path("www/f.bin"), size: 50_000_000, seed: 37)
        let nginx = try await NginxServer(root: w.path("www"), limitRate: 1_000_000)
        let started = Date()
        let (r, status) = try await pipeline(
            w, ["download", nginx.url(for: "f.bin"), "-o", "-"], into: "head -c 1000 | wc -c", timeout: .seconds(120))
        #expect(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "1000")
        #expect(status == 141, "killed by SIGPIPE, as cat would be: \(r)")
        #expect(!r.stderr.contains("resumectl:"), "quietly: \(r.stderr)")
        // The whole file takes 50 s at this rate: a bound far from it holds on a loaded machine too.
        #expect(Date().timeIntervalSince(started) < 25, "at once, not after the whole file (50 s at this rate)")
    }

    @Test func stdoutCarriesOnlyTheBody() async throws {
        let w = try Workspace()
        let content = randomBytes(count: 100_000, seed: 38)
        let server = try await MisbehavingServer(content: content)
        let (r, code) = try await pipeline(
            w, ["download", server.url(), "-o", "-"], into: "sha256sum", timeout: .seconds(120))
        #expect(code == 0, "\(r)")
        #expect(r.stdout.hasPrefix(sha256(content)), "nothing but the body: \(r)")
        let json = try await w.run(["download", server.url(), "-o", "-", "--json"])
        #expect(json.status == 64 && json.stdout.isEmpty, "\(json)")
        let split = try await w.run(["download", server.url(), "-o", "-", "--connections", "4"])
        #expect(split.status == 64, "\(split)")
    }
}
