import Crypto
import Foundation
import Glibc
import Synchronization
import Testing
@testable import ResumeKit
import ResumeS3

/// An in-memory S3 that takes CreateMultipartUpload, parts (ETag: their MD5, read from the request's file
/// range) and Complete; it cuts the first attempt at part 2 and counts the parts in flight at once.
private final class MemoryS3: HTTPTransport, TransportSession, @unchecked Sendable {
    private let state = Mutex((parts: [Int: [UInt8]](), inFlight: 0, most: 0, cut: false, requests: [String]()))
    var most: Int { state.withLock { $0.most } }
    var requests: [String] { state.withLock { $0.requests } }

    func makeSession() -> any TransportSession { self }

    func perform(_ request: TransferRequest, settings: TransportSettings, cancellation: Cancellation, delegate: any ExchangeDelegate)
        -> ExchangeResult
    {
        let query = request.url.split(separator: "?").last.map(String.init) ?? ""
        state.withLock { $0.requests.append(request.method + " " + query) }
        if query == "uploads=" {
            return answer(delegate, 200, body: "<InitiateMultipartUploadResult><UploadId>U1</UploadId></InitiateMultipartUploadResult>")
        }
        if request.method == "PUT", let body = request.body, let number = Int(query.split(separator: "&")[0].dropFirst("partNumber=".count)) {
            let cut = state.withLock { s in
                s.inFlight += 1
                s.most = max(s.most, s.inFlight)
                defer { if number == 2 { s.cut = true } }
                return number == 2 && !s.cut
            }
            usleep(50_000)
            _ = delegate.exchange(progressReceived: 0, sent: body.length / 2)
            var bytes = [UInt8](repeating: 0, count: Int(body.length))
            _ = pread(body.fileDescriptor, &bytes, bytes.count, off_t(body.offset))
            let md5 = Insecure.MD5.hash(data: bytes).hex
            state.withLock { s in
                s.inFlight -= 1
                if !cut { s.parts[number] = Array(Insecure.MD5.hash(data: bytes)) }
            }
            if cut { return ExchangeResult(outcome: .failed(TransportFailure(kind: .network, code: 56, message: "Connection reset by peer"))) }
            return answer(delegate, 200, headers: ["ETag": "\"\(md5)\""])
        }
        let all = state.withLock { $0.parts.sorted { $0.key < $1.key }.flatMap(\.value) }
        let etag = Insecure.MD5.hash(data: all).hex + "-\(all.count / 16)"
        return answer(delegate, 200, body: "<CompleteMultipartUploadResult><ETag>\"\(etag)\"</ETag></CompleteMultipartUploadResult>")
    }

    private func answer(_ delegate: any ExchangeDelegate, _ status: Int, headers: HeaderFields = [:], body: String = "") -> ExchangeResult {
        let head = ResponseHead(status: status, headers: headers)
        _ = delegate.exchange(head: head, effectiveURL: "")
        _ = Array(body.utf8).withUnsafeBytes { delegate.exchange(body: $0) }
        return ExchangeResult(outcome: .completed, head: head)
    }
}

@Suite struct S3OperationTests {
    @Test func partsGoSeveralAtOnceAndACutPartIsRetried() throws {
        let folder = FileManager.default.temporaryDirectory.path + "/s3op-\(UInt64.random(in: 0...UInt64.max))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let size = 7 << 15  // three parts of 64 KiB and a half one
        try Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 131) }).write(to: URL(fileURLWithPath: folder + "/src"))
        let source = try SourceFile(path: folder + "/src")
        var s3 = ResumeToken.S3State(endpoint: "http://127.0.0.1:9", region: "us-east-1", bucket: "b", key: "k", profile: nil,
            pathStyle: true, partSize: 1 << 16, parts: [])
        s3.parallel = 3
        s3.checksum = S3Checksum.none
        let token = ResumeToken(id: "u-test", url: "s3://b/k", headers: [], transfer: .upload(.init(source: source.identity, wire: .s3(s3))))
        let store = TokenStore(directory: folder + "/state")
        try store.save(token)
        let machine = S3MultipartMachine(state: s3, size: Int64(size), endpoint: try S3Endpoint(endpoint: "http://127.0.0.1:9", region: "us-east-1"),
            answers: S3Responses())
        let peer = MemoryS3()
        let clock = NoSleepClock()
        var options = TransferOptions()
        options.clock = clock
        let events = Mutex<[TransferEvent]>([])
        let result = try UploadOperation(
            token: token, source: source, machine: machine, store: store, transport: peer, options: options, cancellation: Cancellation(),
            events: { event in events.withLock { $0.append(event) } }
        ).runToEnd()
        #expect(result.bytes == Int64(size) && result.url == "s3://b/k")
        #expect(peer.most == 3, "parts in flight at once: \(peer.most)")
        #expect(peer.requests.filter { $0.hasPrefix("PUT partNumber=2&") }.count == 2, "\(peer.requests)")
        #expect(peer.requests.last == "POST uploadId=U1")
        #expect(clock.slept.count == 1)
        #expect(events.withLock { $0.contains { if case .retry = $0 { true } else { false } } })
        #expect(!FileManager.default.fileExists(atPath: store.path(forID: "u-test")), "the token goes once S3 assembled the object")
    }
}
