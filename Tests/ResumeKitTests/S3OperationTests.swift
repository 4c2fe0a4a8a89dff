import Foundation
import Synchronization
import Testing
@testable import ResumeKit
import ResumeMarkup

@Suite struct S3OperationTests {
    @Test func partsGoSeveralAtOnceAndACutPartIsRetried() throws {
        let folder = scratchPath("s3op")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let size = 7 << 15  // three parts of 64 KiB and a half one
        try Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 131) }).write(
            to: URL(fileURLWithPath: folder + "/src"))
        let source = try SourceFile(path: folder + "/src")
        var s3 = ResumeToken.S3State(
            endpoint: "http://127.0.0.1:9", region: "us-east-1", bucket: "b", key: "k", profile: nil,
            pathStyle: true, partSize: 1 << 16, parts: [])
        s3.parallel = 3
        s3.checksum = S3Checksum.none
        let token = ResumeToken(
            id: "u-test", url: "s3://b/k", headers: [], transfer: .upload(.init(source: source.identity, wire: .s3(s3)))
        )
        let store = TokenStore(directory: folder + "/state")
        try store.save(token)
        let machine = S3MultipartMachine(
            state: s3, size: Int64(size), endpoint: try S3Endpoint(endpoint: "http://127.0.0.1:9", region: "us-east-1"),
            answers: S3Responses())
        // S3 cuts the first attempt at part 2; each part takes 300 ms, so that parts overlap even on a loaded
        // machine (at 50 ms, with a load of 9 on 2 cores, only two were once seen in flight together).
        let memory = MemoryS3(cutOnce: 2, partSeconds: 0.3)
        let peer = ScriptedTransport(handler: memory.answer)
        let clock = NoSleepClock()
        var options = TransferOptions()
        options.clock = clock
        let events = Mutex<[TransferEvent]>([])
        let result = try UploadOperation(
            token: token, source: source, machine: machine, store: store, transport: peer, options: options,
            cancellation: Cancellation(),
            events: { event in events.withLock { $0.append(event) } }
        ).runToEnd()
        #expect(result.bytes == Int64(size) && result.url == "s3://b/k")
        let requests = peer.requests.map { $0.method + " " + $0.query }
        #expect(memory.most == 3, "parts in flight at once: \(memory.most)")
        #expect(requests.filter { $0.hasPrefix("PUT partNumber=2&") }.count == 2, "\(requests)")
        #expect(requests.last == "POST uploadId=U1")
        #expect(clock.slept.count == 1)
        #expect(events.withLock { $0.contains { if case .retry = $0 { true } else { false } } })
        #expect(
            !FileManager.default.fileExists(atPath: store.path(forID: "u-test")),
            "the token goes once S3 assembled the object")
    }
}
