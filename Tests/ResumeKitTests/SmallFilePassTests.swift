import Foundation
import Testing
@testable import ResumeKit

/// A list's small-file pass over scripted answers, on real files in a temp folder: what it publishes, what
/// it leaves to the workers and with which first attempt, what it never touches, and when it ends.
@Suite struct SmallFilePassTests {
    let dir = scratchPath("rctl-pass")

    /// What the peer holds under a URL's last path segment.
    struct File {
        var status = 200
        var headers: [(String, String)] = []
        var body = [UInt8]()
        /// The connection breaks after the head and this many body bytes.
        var cutAfter: Int?
    }

    /// A peer that answers each GET with the file its URL names.
    func peer(_ files: [String: File]) -> ScriptedTransport {
        ScriptedTransport { call in
            guard let file = files[call.name] else { return call.fail(.refused) }
            var fields = file.headers
            if !fields.contains(where: { $0.0 == "Content-Length" }) {
                fields.append(("Content-Length", "\(file.body.count)"))
            }
            return call.answer(head(file.status, fields), body: file.body, cutAfter: file.cutAfter)
        }
    }

    @Test func publishesWhatEndsInOneAnswerAndLeavesTheRestWithTheirFirstAttempt() throws {
        try FileManager.default.createDirectory(atPath: dir + "/out", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let small = Array("a small file".utf8)
        let transport = peer([
            "a": .init(body: small),
            "gone": .init(status: 404),
            "busy": .init(status: 503, headers: [("Retry-After", "1")]),
            "cut": .init(body: Array(repeating: 7, count: 100), cutAfter: 40),
            "held": .init(body: small),
            "digest": .init(
                headers: [("Repr-Digest", "sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:")], body: small),
            "big": .init(headers: [("Content-Length", "\(2 << 20)")]),
            "after": .init(body: small),
        ])
        let store = TokenStore(directory: dir + "/state")
        try store.ensureDirectory()
        // An earlier run's `.part` of "held": the pass must leave it to a worker, untouched.
        try Data("earlier".utf8).write(to: URL(fileURLWithPath: dir + "/out/held.part"))
        let names = ["a", "gone", "busy", "cut", "held", "digest", "big", "after"]
        let requests = names.map { DownloadRequest(url: "http://h/f/" + $0, outputPath: dir + "/out/" + $0) }
        let client = TransferClient(store: store, transport: transport)
        let queue = WorkQueue<Result<DownloadResult, TransferError>>(count: requests.count)
        let publisher = BatchPublisher(store: store)
        let pass = SmallFilePass(
            client: client, requests: requests, queue: queue, publisher: publisher,
            cancellation: Cancellation(), events: { _, _ in })
        let left = pass.run(on: [transport.session()])
        #expect(publisher.finish().isEmpty)

        #expect(try Data(contentsOf: URL(fileURLWithPath: dir + "/out/a")) == Data(small))
        #expect(left.map(\.index) == [1, 2, 3, 4, 5, 6], "the big one ends the pass: 'after' stays in the queue")
        #expect(queue.take() == 7)
        let earlier = Dictionary(uniqueKeysWithValues: left.map { (names[$0.index], $0.earlier) })
        #expect(earlier["gone"]?.verdict == .fail(.status(404, reason: "")))
        #expect(earlier["busy"]?.verdict == .fault(.answered(503, retryAfter: "1")))
        if case .fault? = earlier["cut"]?.verdict {
        } else {
            Issue.record("a cut is a fault for the retrier: \(String(describing: earlier["cut"]))")
        }
        #expect(earlier["cut"]?.announced == true)
        for name in ["held", "digest", "big"] { #expect(earlier[name]?.verdict == nil, "\(name)") }
        #expect(
            transport.requests.map(\.name) == ["a", "gone", "busy", "cut", "digest", "big"], "'held' is never asked")
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir + "/out/held.part")) == Data("earlier".utf8))
        let files = try FileManager.default.contentsOfDirectory(atPath: dir + "/out").sorted()
        #expect(files == ["a", "held.part"], "the pass removes every .part it made and did not publish")
        #expect(store.ids().isEmpty, "no token")
    }

    @Test func aQueueHandsBackWhatItIsGivenBeforeAnythingNew() {
        let queue = WorkQueue<Int>(count: 5)
        #expect(queue.take() == 0 && queue.take() == 1 && queue.take() == 2)
        queue.putBack([0, 2])
        #expect(!queue.isDrained)
        #expect([queue.take(), queue.take(), queue.take(), queue.take()] == [0, 2, 3, 4])
        #expect(queue.take() == nil && queue.isDrained)
    }
}
