import Foundation
import Glibc
import Synchronization
import Testing
@testable import ResumeKit
import ResumeMarkup

// The fault table of the README, run on every path the library drives, through a scripted transport:
// no sockets, no sleeps (the clock records the delays it was asked for), milliseconds a case.

/// One scripted misfortune, or the peer's ordinary answer.
private enum Step: Sendable {
    case unresolved, refused, reset, stall
    case status(Int, retryAfter: String?)
    case serve
}

/// A well-behaved server of one kind, whose answers follow a script of misfortunes (``Step``).
private final class Peer: @unchecked Sendable {
    enum Kind { case files, tus, ietf, plainUpload, s3 }
    let kind: Kind
    let body: [UInt8]
    private let tusOffset = Mutex<Int64>(0)
    private let s3 = MemoryS3()

    init(_ kind: Kind, body: [UInt8] = Array(repeating: 7, count: 4096)) {
        self.kind = kind
        self.body = body
    }

    /// A transport that plays `script` to the first requests, then answers as this peer.
    func transport(_ script: [Step]) -> ScriptedTransport {
        ScriptedTransport(script: script.map(answer), handler: serve)
    }

    private func answer(_ step: Step) -> ScriptedTransport.Answer {
        switch step {
        case .unresolved: { $0.fail(.unresolved) }
        case .refused: { $0.fail(.refused) }
        case .reset: { $0.fail(.reset) }
        case .stall: { $0.stall() }
        case .status(let status, let after):
            { [kind] in
                $0.answer(
                    status,
                    (after.map { [("Retry-After", $0)] } ?? []) + (kind == .tus ? [("Tus-Resumable", "1.0.0")] : []))
            }
        case .serve: serve
        }
    }

    private func serve(_ call: Call) -> ExchangeResult {
        switch (kind, call.method) {
        case (.s3, _):
            return s3.answer(call)
        case (.files, "HEAD"):
            return call.answer(
                200, [("ETag", "\"v1\""), ("Content-Length", String(body.count)), ("Accept-Ranges", "bytes")])
        case (.files, _):
            if let range = call.request.headers["Range"], let from = Int(range.dropFirst(6).prefix(while: \.isNumber)) {
                let to = range.split(separator: "-").last.flatMap { Int($0) } ?? body.count - 1
                return call.answer(
                    206,
                    [
                        ("ETag", "\"v1\""), ("Content-Range", "bytes \(from)-\(to)/\(body.count)"),
                        ("Content-Length", String(to - from + 1)),
                    ],
                    body: body[from...to])
            }
            return call.answer(200, [("ETag", "\"v1\""), ("Content-Length", String(body.count))], body: body)
        case (.plainUpload, _):
            return call.answer(201)
        case (.ietf, "HEAD"):
            return call.answer(204, [("Upload-Offset", "0"), ("Upload-Complete", "?0")])
        case (.ietf, _):
            // The draft's creation or append: the 104 names the upload, the final answer takes it whole.
            call.informational(
                104,
                [
                    ("Location", "http://peer/up/1"),
                    ("Upload-Draft-Interop-Version", call.request.headers["Upload-Draft-Interop-Version"] ?? "8"),
                ])
            return call.answer(201, [("Upload-Complete", "?1")])
        case (.tus, "OPTIONS"):
            return call.answer(
                204, [("Tus-Resumable", "1.0.0"), ("Tus-Version", "1.0.0"), ("Tus-Extension", "creation,termination")])
        case (.tus, "POST"):
            tusOffset.withLock { $0 = 0 }
            return call.answer(201, [("Tus-Resumable", "1.0.0"), ("Location", "http://peer/files/1")])
        case (.tus, "HEAD"):
            let offset = tusOffset.withLock { $0 }
            return call.answer(
                200,
                [("Tus-Resumable", "1.0.0"), ("Upload-Offset", String(offset)), ("Upload-Length", String(body.count))])
        case (.tus, _):
            let end = tusOffset.withLock { offset in
                offset += call.request.body?.length ?? 0
                return offset
            }
            return call.answer(204, [("Tus-Resumable", "1.0.0"), ("Upload-Offset", String(end))])
        }
    }
}

/// The transfer paths the library drives, each run against a scripted peer.
enum FaultPath: String, CaseIterable, CustomStringConvertible, Sendable {
    /// The downloads, each the one fetch with another output: a `.part` (`download`), segments of one
    /// (`connections`), a pipe (`stdout`), a list's file (`list`).
    /// `s3Parts`: an S3 multipart upload, its parts several at once on one attempt loop.
    case download, connections, stdout, list, ietfUpload, tusUpload, plainUpload, s3Parts
    var description: String { rawValue }
}

/// What the README's fault table promises.
private struct Expected: Equatable {
    var exit: Int32
    var sleeps: [Double]?
}

@Suite struct FaultTableTests {
    private func run(_ path: FaultPath, _ script: [Step], retries: Int? = 10) async throws -> (
        exit: Int32, clock: NoSleepClock, events: [TransferEvent]
    ) {
        let folder = scratchPath("faults")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let clock = NoSleepClock()
        var options = TransferOptions()
        options.retry = RetryPolicy(maxRetries: retries)
        options.clock = clock
        let body = (0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let peer: Peer
        switch path {
        case .download, .connections, .stdout, .list: peer = Peer(.files, body: body)
        case .tusUpload: peer = Peer(.tus)
        case .ietfUpload: peer = Peer(.ietf)
        case .plainUpload: peer = Peer(.plainUpload)
        case .s3Parts: peer = Peer(.s3)
        }
        let transport = peer.transport(script)
        if path == .connections { options.connections = 2 }
        let client = TransferClient(
            store: TokenStore(directory: folder + "/state"), transport: transport, options: options)
        let events = Mutex<[TransferEvent]>([])
        let record: EventHandler = { event in events.withLock { $0.append(event) } }
        var exit: Int32 = 0
        do {
            switch path {
            case .download, .connections:
                let result = try await client.download(
                    DownloadRequest(url: "http://peer/file", outputPath: folder + "/out"), events: record)
                #expect(result.bytes == Int64(body.count))
                #expect(try Array(Data(contentsOf: URL(fileURLWithPath: folder + "/out"))) == body)
            case .stdout:
                // What `-o -` runs, its pipe a file here.
                let fd = open(folder + "/piped", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
                defer { close(fd) }
                let result = try StreamDownload(
                    url: "http://peer/file", headers: [:], output: fd, session: transport.makeSession(),
                    options: options, expectedSHA256: nil, cancellation: Cancellation(), events: record
                ).run()
                #expect(result.bytes == Int64(body.count))
                #expect(try Array(Data(contentsOf: URL(fileURLWithPath: folder + "/piped"))) == body)
            case .list:
                let results = await client.downloadAll(
                    [DownloadRequest(url: "http://peer/file", outputPath: folder + "/listed")], parallel: 2
                ) { _, event in
                    record(event)
                }
                let result = try #require(results.first).get()
                #expect(result.bytes == Int64(body.count))
                #expect(try Array(Data(contentsOf: URL(fileURLWithPath: folder + "/listed"))) == body)
            case .ietfUpload, .tusUpload, .plainUpload:
                let file = folder + "/source"
                try Data(repeating: 9, count: 4096).write(to: URL(fileURLWithPath: file))
                _ = try await client.upload(
                    UploadRequest(
                        filePath: file, url: "http://peer/files/",
                        uploadProtocol: [.tusUpload: .tus, .ietfUpload: .ietf][path] ?? .plain), events: record)
            case .s3Parts:
                let file = folder + "/source"
                try Data(body).write(to: URL(fileURLWithPath: file))
                try uploadParts(file, store: client.store, transport: transport, options: options, events: record)
            }
        } catch let error as TransferError {
            exit = error.exitStatus
        }
        return (exit, clock, events.withLock { $0 })
    }

    /// Three parts of 1 MiB, two at a time, through the operation every upload runs on.
    private func uploadParts(
        _ file: String, store: TokenStore, transport: any HTTPTransport, options: TransferOptions,
        events: @escaping EventHandler
    ) throws {
        let source = try SourceFile(path: file)
        var s3 = ResumeToken.S3State(
            endpoint: "http://peer", region: "us-east-1", bucket: "b", key: "k", profile: nil,
            pathStyle: true, partSize: 1 << 20, parts: [])
        s3.parallel = 2
        s3.checksum = S3Checksum.none
        let token = ResumeToken(
            id: "u-faults", url: "s3://b/k", headers: [],
            transfer: .upload(.init(source: source.identity, wire: .s3(s3))))
        try store.save(token)
        let machine = S3MultipartMachine(
            state: s3, size: source.identity.size,
            endpoint: try S3Endpoint(endpoint: "http://peer", region: "us-east-1"), answers: S3Responses())
        let result = try UploadOperation(
            token: token, source: source, machine: machine, store: store, transport: transport,
            options: options, cancellation: Cancellation(), events: events
        ).runToEnd()
        #expect(result.bytes == source.identity.size)
    }

    @Test(arguments: FaultPath.allCases)
    func aHostThatDoesNotResolveOnAFreshTransferFailsAtOnce(_ path: FaultPath) async throws {
        let (exit, clock, _) = try await run(path, [.unresolved, .unresolved, .unresolved])
        // --connections plans with a HEAD first; the one-connection download it hands over to fails the same way.
        #expect(exit == 1)
        #expect(clock.slept.isEmpty)
    }

    @Test(arguments: FaultPath.allCases)
    func aRefusedPortWithTwoRetriesEndsResumable(_ path: FaultPath) async throws {
        let (exit, clock, _) = try await run(path, Array(repeating: .refused, count: 20), retries: 2)
        #expect(exit == 75)
        #expect(!clock.slept.isEmpty)
    }

    @Test(arguments: FaultPath.allCases)
    func twoBusyAnswersAreWaitedOutNoEarlierThanRetryAfter(_ path: FaultPath) async throws {
        let (exit, clock, events) = try await run(path, [.status(503, retryAfter: "2"), .status(503, retryAfter: "2")])
        #expect(exit == 0)
        let retries = events.compactMap { if case .retry(_, let delay, _) = $0 { delay } else { nil } }
        #expect(clock.slept == [2, 2] || path == .connections, "slept \(clock.slept)")
        #expect(retries == [2, 2] || path == .connections)
    }

    @Test(arguments: FaultPath.allCases)
    func aResetAndAStallAreRetriedWithBackoff(_ path: FaultPath) async throws {
        let (exit, clock, _) = try await run(path, [.reset, .stall])
        #expect(exit == 0)
        #expect(clock.slept.count == 2 || path == .connections)
        #expect(clock.slept.allSatisfy { $0 > 0 && $0 <= 2 }, "first retries back off from 1 s: \(clock.slept)")
    }

    @Test(arguments: FaultPath.allCases)
    func aRefusalIsNotRetried(_ path: FaultPath) async throws {
        // tus asks OPTIONS first, and takes a refused OPTIONS as "tus core, no extensions": the 404 goes to the
        // creation.
        let (exit, clock, _) = try await run(
            path, (path == .tusUpload ? [.serve] : []) + [.status(404, retryAfter: nil)])
        #expect(exit == 1)
        #expect(clock.slept.isEmpty)
    }

    @Test func retryAfterAsADateIsHonoured() {
        var backoff = Backoff(RetryPolicy(maxRetries: 3))
        let directive = RetryRules.decide(
            .status(503, retryAfter: "Tue, 14 Nov 2023 22:13:30 GMT", message: ""), fresh: false,
            progressMade: false, waitForNetwork: false, backoff: &backoff, now: 1_700_000_000)
        #expect(directive == .retry(delay: 10))
    }

    @Test func theNetworkIsWaitedForWithoutSpendingRetries() {
        var backoff = Backoff(RetryPolicy(maxRetries: 1))
        for fault in [Fault.unresolved("x"), .unreachable("y"), .unresolved("z")] {
            guard
                case .waitForNetwork = RetryRules.decide(
                    fault, fresh: true, progressMade: false, waitForNetwork: true,
                    backoff: &backoff, now: 0)
            else { Issue.record("\(fault) was not waited for"); return }
        }
        #expect(
            RetryRules.decide(
                .lost("cut"), fresh: false, progressMade: false, waitForNetwork: true, backoff: &backoff, now: 0)
                != .exhausted)
    }

    @Test func aSleepEndsAtOnceWhenStopped() async {
        let cancellation = Cancellation()
        let started = Monotonic.now
        Thread.detachNewThread {
            usleep(50_000)
            cancellation.stop(.pause)
        }
        #expect(!cancellation.sleep(seconds: 30))
        #expect(Monotonic.now - started < 5)
    }
}
