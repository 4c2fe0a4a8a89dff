import Foundation
import Glibc
import Synchronization
import Testing
@testable import ResumeKit

/// libcurl may send a request again: after a redirect or an auth round the body goes back to its start (the
/// seek callback); when a reused connection died under the body before any answer it is not sent again blind,
/// and the attempt is retried on a new connection after a fresh HEAD, never given up while retries remain.
@Suite struct RewindTests {
    private final class Sink: ExchangeDelegate {
        func exchange(head: ResponseHead, effectiveURL: String) -> Bool { true }
    }

    @Test func theSeekCallbackMovesAFileBodyBackSoTheSameBytesGoOutAgainOnceTheServerAnswered() throws {
        let path = scratchPath("rewind")
        let bytes = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        defer { unlink(path) }
        let fd = open(path, O_RDONLY)
        defer { close(fd) }
        let context = ExchangeContext(
            delegate: Sink(), cancellation: Cancellation(), followRedirects: false,
            body: RequestBody(fileDescriptor: fd, offset: 1000, length: 50_000), stallSeconds: 30)
        func readAll() -> [UInt8] {
            var out: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 16_384)
            while true {
                let n = buffer.withUnsafeMutableBytes { context.read(into: $0) }
                if n <= 0 { return out }
                out += buffer[..<n]
            }
        }
        #expect(context.rewind(to: 0), "nothing went out yet: going back costs nothing")
        let first = readAll()
        #expect(first == Array(bytes[1000..<51_000]))
        // Body bytes went out and no answer began (a reused connection died under the body): not sent again
        // blind, the next attempt asks the server's offset first.
        #expect(!context.rewind(to: 0))
        // A redirect (or an auth round) answered: libcurl sends the request again, the body from its start.
        let line = Array("HTTP/1.1 307 Temporary Redirect\r\n".utf8)
        #expect(line.withUnsafeBytes { context.header($0) })
        #expect(context.rewind(to: 0))
        #expect(readAll() == first, "the body sent again is the same body")
        #expect(context.rewind(to: 20_000))
        #expect(readAll() == Array(bytes[21_000..<51_000]))
        #expect(!context.rewind(to: 60_000), "not past what was sent")
        #expect(context.rewinds == 3)
    }

    @Test func aPipeCannotGoBack() {
        var ends: [Int32] = [-1, -1]
        #expect(pipe(&ends) == 0)
        defer { close(ends[0]); close(ends[1]) }
        let context = ExchangeContext(
            delegate: Sink(), cancellation: Cancellation(), followRedirects: false,
            body: .stream(ends[0]), stallSeconds: 30)
        #expect(!context.rewind(to: 0))
    }

    /// An IETF peer whose every session is one connection. The first PATCH, on the connection its HEAD
    /// used, fails as libcurl fails when it cannot rewind (CURLE_SEND_FAIL_REWIND, 65).
    private func oneConnectionPerSession(size: Int64) -> ScriptedTransport {
        ScriptedTransport { call in
            switch call.method {
            case "POST":
                // The creation names the upload, then the connection is cut with 1000 bytes through.
                call.informational(
                    104,
                    [
                        ("Location", "http://peer/up/1"),
                        ("Upload-Draft-Interop-Version", call.request.headers["Upload-Draft-Interop-Version"] ?? "8"),
                    ])
                return call.fail(.reset)
            case "HEAD":
                return call.answer(204, [("Upload-Offset", "1000"), ("Upload-Complete", "?0")])
            default:
                if call.seen.filter({ !["POST", "HEAD"].contains($0.method) }).count == 1 {
                    return call.fail(
                        TransportFailure(
                            kind: .network, code: 65, message: "the connection broke before the server answered"))
                }
                return call.answer(201, [("Upload-Complete", "?1"), ("Upload-Offset", String(size))])
            }
        }
    }

    @Test func aBodyLibcurlCouldNotRewindIsSentAgainOnANewConnection() async throws {
        let folder = scratchPath("rewind")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let file = folder + "/source"
        try Data(repeating: 9, count: 4096).write(to: URL(fileURLWithPath: file))
        var options = TransferOptions()
        options.retry = RetryPolicy(maxRetries: 2)
        options.clock = NoSleepClock()
        let peer = oneConnectionPerSession(size: 4096)
        let client = TransferClient(store: TokenStore(directory: folder + "/state"), transport: peer, options: options)
        let events = Mutex<[TransferEvent]>([])
        let result = try await client.upload(
            UploadRequest(filePath: file, url: "http://peer/files/", uploadProtocol: .ietf),
            events: { event in events.withLock { $0.append(event) } })
        #expect(result.bytes == 4096)
        let log = peer.requests
        let patches = log.filter { $0.method == "PATCH" }
        #expect(patches.count == 2, "\(log)")
        // The PATCH after the failed rewind went out on a connection of its own, after a fresh HEAD; and
        // after the first break no request reused a connection until a body went through.
        #expect(patches.count == 2 && patches[1].session != patches[0].session, "\(log)")
        #expect(log.suffix(2).map(\.method) == ["HEAD", "PATCH"], "\(log)")
        let afterBreak = log.dropFirst()
        #expect(log.first?.method == "POST" && Set(afterBreak.map(\.session)).count == afterBreak.count, "\(log)")
        // Two retries (the cut, the failed rewind) of two allowed: the rewind did not end the upload.
        let retries = events.withLock { $0 }.compactMap { if case .retry(_, _, let error) = $0 { error } else { nil } }
        #expect(retries.count == 2 && retries.allSatisfy { !$0.isEmpty }, "\(retries)")
    }
}
