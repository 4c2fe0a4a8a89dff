import Foundation
import ResumeKit
import Testing

@testable import ResumeServer

/// `serve --store s3://` when a `CompleteMultipartUpload` succeeded but the upload's record never said so
/// (the instance that completed it killed in between, or another instance reading the upload meanwhile):
/// S3 no longer lists the multipart upload, and the object at the key is the only trace. Real moto with
/// signatures checked, real instances, the real client.
@Suite("serve S3 store: the completion window")
struct ServeS3CompletionTests {
    static let MiB = 1 << 20

    /// The window, made on purpose: a client killed mid-upload, then its upload's last bytes stored and
    /// the multipart upload completed on S3 directly (as an instance killed right after its completion
    /// leaves it), the record still `receiving`. `resumectl resume` must hear "complete" from a HEAD, not
    /// 404 (a new upload, whose completion would meet this object with 409 forever).
    @Test(
        """
        an upload completed on S3 whose record never said so: HEAD answers complete, the client finishes without \
        starting over
        """,
        arguments: ["ietf", "tus"])
    func completedBehindTheRecord(protocol name: String) async throws {
        let cluster = try await S3ServeCluster(instances: 2)
        let w = try Workspace()
        let size = 13 * Self.MiB + 4321
        let file = w.path("www/w.bin")
        let digest = try makeRandomFile(path: file, size: size, seed: name == "tus" ? 4701 : 4702)
        let target = name == "tus" ? cluster.url + "/in/" : cluster.url + "/in/w.bin"
        let client = try w.start([
            "upload", file, target, "--protocol", name, "--limit-rate", "2M",
            "--retries", "200", "--retry-delay", "0.1",
        ])
        defer { client.send(signal: SIGKILL) }
        let s3 = try ServeS3StoreTests.client(
            cluster.moto, bucket: cluster.bucket, prefix: "inbox/", home: cluster.home.path)
        let store = S3UploadStore(client: s3, keys: S3UploadKeys(prefix: "inbox/"))

        // A part on S3, then the client killed, then the instance's request settled (its lock gone).
        var id: String?
        let deadline = ContinuousClock.now + .seconds(90)
        while ContinuousClock.now < deadline {
            if let first = try? store.recordIDs().first, let (_, progress) = try? store.load(first),
                !progress.parts.isEmpty
            {
                id = first
                break
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        let uploadID = try #require(id, "no part reached S3")
        client.send(signal: SIGKILL)
        _ = try await client.wait(timeout: .seconds(10))
        // Settled: no lock in two looks half a second apart (an instance may take it briefly, e.g. to sweep).
        let settled = ContinuousClock.now + .seconds(30)
        var free = false
        while !free && ContinuousClock.now < settled {
            if ServeS3StoreTests.lockKey(s3) == nil {
                try await Task.sleep(for: .milliseconds(500))
                free = ServeS3StoreTests.lockKey(s3) == nil
            } else {
                try await Task.sleep(for: .milliseconds(100))
            }
        }
        #expect(free, "the killed client's request still holds the lock")

        // The file after the parts S3 holds (the tail's bytes are its first) as the last part, and the completion.
        let (record, progress) = try #require(try store.load(uploadID))
        #expect(progress.offset < Int64(size), "the client was killed before its end")
        let bytes = try Data(contentsOf: URL(fileURLWithPath: file))
        let rest = Array(bytes[Int(progress.stored)...])
        let last = try store.uploadPart(record, number: progress.nextPart, rest)
        let document = S3UploadStore.completion(progress.parts + [last], checksum: record.checksum)
        let completed = try s3.send(
            "POST", key: store.finalKey(record.upload), query: [("uploadId", record.multipartID)],
            headers: ["Content-Type": "application/xml"], body: Array(document.utf8))
        #expect(
            completed.isSuccess && s3.answers.error(completed.body) == nil,
            "\(completed.status) \(String(decoding: completed.body, as: UTF8.self))")
        #expect(try store.record(uploadID)?.upload.phase == .receiving, "the window: the record does not know")
        let head = try await cluster.moto.head(cluster.bucket, cluster.key("in/w.bin"))
        #expect(head.size == size)

        let before = (0..<2).map { cluster.requests($0).count }
        let token = try #require(try w.tokens().first, "the killed client left its token")
        let r = try await w.run(["resume", token, "--retries", "5", "--retry-delay", "0.1"], timeout: .seconds(120))
        let after = (0..<2).flatMap { cluster.requests($0).dropFirst(before[$0]) }
        #expect(r.status == 0, "\(r) \(after)")
        #expect(try await cluster.moto.sha256(cluster.bucket, cluster.key("in/w.bin")) == digest)
        #expect(!after.contains { $0.hasPrefix("POST ") }, "the client started over: \(after)")
        #expect(!after.contains { $0.contains(" 409 ") || $0.contains(" 404 ") }, "\(after)")
        #expect(after.contains { $0.hasPrefix("HEAD ") }, "the client asked where the upload stands: \(after)")
        let now = try #require(try store.record(uploadID))
        #expect(
            now.upload.phase == .finishing && now.upload.offset == Int64(size),
            "the record says finished now: \(now.upload)")
    }
}
