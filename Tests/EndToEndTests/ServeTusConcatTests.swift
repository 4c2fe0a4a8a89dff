import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import ResumeKit
import Testing

@testable import ResumeServer

/// `serve`'s tus concatenation (tus 1.0.0, extension "Concatenation") over its pure parts: the machine's
/// rules, one test per MUST, the table's reading of partial uploads, and the plan of a final upload's parts on S3.
@Suite("serve tus concatenation machine")
struct ServeTusConcatMachineTests {
    typealias M = TusMachine

    static let tus = ("Tus-Resumable", "1.0.0")
    static let ids = ["0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210"]

    static func creation(_ fields: [(String, String)], maxSize: Int64? = nil) -> M.Request {
        M.classify(method: .POST, target: "/in/", headers: HTTPHeaders([tus] + fields), maxSize: maxSize)
    }

    static func status(_ request: M.Request) -> Int? {
        if case .answer(let answer) = request { return answer.status }
        return nil
    }

    static func record(_ id: String, length: Int64, offset: Int64, concat: UploadRecord.Concat?) -> UploadRecord {
        UploadRecord(
            id: id, kind: .tus, target: UploadRecord.partialTarget(id), length: length, offset: offset,
            expires: 1_800_000_000_000, concat: concat)
    }

    @Test("concatenation: the Server MUST add concatenation to Tus-Extension")
    func listed() {
        #expect(M.options(maxSize: nil)["Tus-Extension"]?.split(separator: ",").contains("concatenation") == true)
        #expect(M.options(maxSize: nil)["Tus-Extension"]?.contains("concatenation-unfinished") == false)
    }

    @Test("concatenation: a partial upload is created as any upload, with Upload-Concat: partial; HEAD says partial")
    func partial() {
        guard case .create(let creation) = Self.creation([("Upload-Concat", "partial"), ("Upload-Length", "5")]) else {
            Issue.record("a partial creation is a creation")
            return
        }
        #expect(creation.partial && creation.length == 5)
        guard case .create(let plain) = Self.creation([("Upload-Length", "5")]) else { return }
        #expect(!plain.partial)
        #expect(Self.status(Self.creation([("Upload-Concat", "whole"), ("Upload-Length", "5")])) == 400)
        let head = M.offset(Self.record(Self.ids[0], length: 5, offset: 5, concat: .partial), finished: true)
        #expect(head["Upload-Concat"] == "partial" && head["Upload-Offset"] == "5")
    }

    @Test(
        "concatenation: Upload-Concat: final; and the partial uploads' URLs, space-separated, absolute or paths"
    )
    func final() {
        let list = "final;http://example.net:8080/tus_upload/\(Self.ids[1]) /tus_upload/\(Self.ids[0])"
        let request = Self.creation([("Upload-Concat", list), ("Upload-Metadata", "filename YS5iaW4=")])
        #expect(request == .concatenate(M.Final(parts: [Self.ids[1], Self.ids[0]], metadata: "filename YS5iaW4=")))
    }

    @Test("concatenation: the Client MUST NOT include Upload-Length in the final upload's creation (400), nor a body")
    func finalWithoutLength() {
        let list = "final;/tus_upload/\(Self.ids[0])"
        #expect(Self.status(Self.creation([("Upload-Concat", list), ("Upload-Length", "5")])) == 400)
        #expect(Self.status(Self.creation([("Upload-Concat", list), ("Upload-Defer-Length", "1")])) == 400)
        #expect(Self.status(Self.creation([("Upload-Concat", list), ("Content-Length", "3")])) == 400)
        #expect(Self.status(Self.creation([("Upload-Concat", "final;")])) == 400, "no URL at all")
        #expect(Self.status(Self.creation([("Upload-Concat", list), ("Upload-Metadata", "filename %%")])) == 400)
    }

    @Test("concatenation: a URL naming no upload of this server is 404, as an unknown upload is")
    func foreignURL() {
        for url in ["/files/\(Self.ids[0])", "/tus_upload/xyz", "https://example.net/elsewhere", "/tus_upload/"] {
            #expect(Self.status(Self.creation([("Upload-Concat", "final;" + url)])) == 404, "\(url)")
        }
    }

    @Test("concatenation: the final upload's length MUST be the sum of the partial uploads' lengths")
    func sum() {
        let a = Self.record(Self.ids[0], length: 7, offset: 7, concat: .partial)
        let b = Self.record(Self.ids[1], length: 5, offset: 5, concat: .partial)
        #expect(M.join([(a, true), (b, true), (a, true)], maxSize: nil) == .length(19), "a partial used twice")
        #expect(M.join([(a, true), (b, true)], maxSize: 12) == .length(12))
    }

    @Test(
        """
        concatenation: without concatenation-unfinished, a partial upload not finished is refused (400), as is an \
        upload that is no partial one; an unknown one is 404; a sum past the limit is 413 with Tus-Max-Size
        """
    )
    func refusals() {
        let done = Self.record(Self.ids[0], length: 7, offset: 7, concat: .partial)
        let half = Self.record(Self.ids[1], length: 5, offset: 2, concat: .partial)
        let whole = Self.record(Self.ids[1], length: 5, offset: 5, concat: nil)
        func status(_ joined: M.Joined) -> Int? {
            if case .refused(let answer) = joined { return answer.status }
            return nil
        }
        #expect(status(M.join([(done, true), (half, false)], maxSize: nil)) == 400)
        #expect(status(M.join([(done, true), (whole, true)], maxSize: nil)) == 400)
        #expect(status(M.join([(done, true), nil], maxSize: nil)) == 404)
        var ietf = done
        ietf.kind = .ietf
        #expect(status(M.join([(ietf, true)], maxSize: nil)) == 404, "a draft upload is no tus partial upload")
        guard case .refused(let tooLarge) = M.join([(done, true), (done, true)], maxSize: 13) else {
            Issue.record("14 bytes past a limit of 13")
            return
        }
        #expect(tooLarge.status == 413 && tooLarge["Tus-Max-Size"] == "13")
        #expect(status(M.join([(done, true), (done, true)], maxSize: nil)) == nil)
    }

    @Test("concatenation: the Server MUST respond with 403 Forbidden to PATCH requests against a final upload URL")
    func patchFinal() {
        let final = Self.record(Self.ids[0], length: 12, offset: 12, concat: .final(parts: Self.ids))
        let append = M.Append(id: Self.ids[0], offset: 12, length: nil, checksum: nil)
        for finished in [true, false] {
            let refused = M.admit(append, contentLength: 0, record: final, finished: finished, maxSize: nil)
            #expect(refused?.status == 403)
        }
    }

    @Test(
        """
        concatenation: HEAD of a final upload has Upload-Concat: final and its partial uploads' URLs, Upload-Length \
        the sum, and no Upload-Offset until the concatenation has finished
        """
    )
    func headFinal() {
        var final = Self.record(Self.ids[0], length: 12, offset: 0, concat: .final(parts: Self.ids.reversed()))
        let joining = M.offset(final, finished: false)
        #expect(joining["Upload-Concat"] == "final;/tus_upload/\(Self.ids[1]) /tus_upload/\(Self.ids[0])")
        #expect(joining["Upload-Length"] == "12" && joining["Upload-Offset"] == nil)
        final.offset = 12
        let joined = M.offset(final, finished: true)
        #expect(joined["Upload-Offset"] == "12" && joined["Upload-Length"] == "12")
    }

    @Test("the table reads partial uploads without stopping a writer; another login's are unknown")
    func tableEntries() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let loop = group.next()
        let table = UploadTable(slots: nil)
        var mine = Self.record(Self.ids[0], length: 7, offset: 7, concat: .partial)
        mine.user = "alice"
        table.insert(mine, finished: true)
        let writer = UploadTable.Writer(
            stop: { Issue.record("a writer stopped") }, settled: loop.makeSucceededFuture(()))
        table.insert(Self.record(Self.ids[1], length: 5, offset: 2, concat: .partial), writer: writer)
        // Without a shared store the table answers at once, on the calling thread.
        var found: [UploadTable.Entry?] = []
        table.entries(Self.ids[...], owner: "alice", on: loop) { found = (try? $0.get()) ?? [] }
        #expect(found.count == 2 && found[0]?.record.id == Self.ids[0] && found[1] == nil)
        table.entries(Self.ids[...], owner: nil, on: loop) { found = (try? $0.get()) ?? [] }
        #expect(found.count == 2 && found[0] == nil && found[1]?.writer != nil && found[1]?.finished == false)
    }

    @Test(
        "S3: parts of at least the minimum but the last, copied from one partial upload or sent, covering each in order"
    )
    func s3Plan() {
        let MiB: Int64 = 1 << 20
        let sizes = [7 * MiB + 5, 3 * MiB, 6 * MiB, MiB + 17, 0, 5 * MiB]
        let parts = S3JoinPlan.parts(sizes, minimum: 5 * MiB)
        #expect(parts.dropLast().allSatisfy { $0.size >= 5 * MiB })
        #expect(parts.first == .copy(.init(source: 0, range: 0..<7 * MiB + 5)))
        #expect(parts[1] == .send([.init(source: 1, range: 0..<3 * MiB), .init(source: 2, range: 0..<2 * MiB)]))
        // Every byte once, in order.
        let slices = parts.flatMap(\.slices)
        var next = (source: 0, offset: Int64(0))
        for slice in slices {
            while next.source < sizes.count && next.offset == sizes[next.source] { next = (next.source + 1, 0) }
            #expect(slice.source == next.source && slice.range.lowerBound == next.offset, "\(slice)")
            next.offset = slice.range.upperBound
        }
        #expect(slices.reduce(0) { $0 + Int64($1.range.count) } == sizes.reduce(0, +))
        #expect(S3JoinPlan.parts([], minimum: 5 * MiB) == [.send([])], "an empty final upload is one empty part")
        let huge = S3JoinPlan.parts([12 << 30], minimum: 5 * MiB)
        #expect(huge.count == 3 && huge.allSatisfy { $0.size <= MultipartPlan.maximumPartSize && $0.size >= 5 * MiB })
    }
}

/// tus concatenation end to end: the built `resumectl serve`, on a folder and on S3 (moto with signatures
/// checked), partial uploads sent in parallel by curl, the final upload made of them; the refusals; and a
/// SIGKILL while the final upload is joined, then its retry after a restart.
@Suite("serve tus concatenation")
struct ServeTusConcatTests {
    static let MiB = 1 << 20
    static let tus = ["-H", "Tus-Resumable: 1.0.0"]

    /// One `serve` on a folder or on S3, restartable; `base` is its URL.
    final class Peer: @unchecked Sendable {
        let store: String
        let folder: TempDirectory
        /// Where the test keeps its own files, apart from what is served.
        let scratch: TempDirectory
        var cluster: S3ServeCluster?
        var serve: RunningProcess?
        var base = ""
        let extra: [String]

        init(_ store: String, extra: [String] = []) async throws {
            self.store = store
            self.extra = extra
            folder = try TempDirectory(prefix: "resumectl-concat")
            scratch = try TempDirectory(prefix: "resumectl-concat-scratch")
            if store == "s3" {
                cluster = try await S3ServeCluster(instances: 1, extra: extra)
                base = "http://127.0.0.1:\(cluster!.ports[0])"
            } else {
                try await start()
            }
        }

        func start() async throws {
            let (process, port) = try await ServeProcess.start(folder: folder.path, extra)
            serve = process
            base = "http://127.0.0.1:\(port)"
        }

        /// SIGKILL, then a new instance on the same store.
        func restart() async throws {
            if let cluster { return try await cluster.restart(0, extra: extra) }
            serve?.send(signal: SIGKILL)
            _ = try await serve?.wait(timeout: .seconds(10))
            try await start()
        }

        /// The stored file's SHA-256, or `nil` when there is none.
        func digest(_ path: String) async throws -> String? {
            if let cluster {
                let keys = try await cluster.moto.keys(cluster.bucket)
                return keys.contains(cluster.key(path))
                    ? try await cluster.moto.sha256(cluster.bucket, cluster.key(path)) : nil
            }
            return FileManager.default.fileExists(atPath: folder.path(path)) ? try sha256(file: folder.path(path)) : nil
        }

        /// The files a client can see: no partial upload among them.
        func visible() async throws -> [String] {
            if let cluster {
                return try await cluster.moto.keys(cluster.bucket).filter { !$0.contains(".resumectl-uploads") }
                    .map { String($0.dropFirst("inbox/".count)) }.sorted()
            }
            let all = FileManager.default.enumerator(atPath: folder.path)?.allObjects as? [String] ?? []
            return all.filter { !$0.hasPrefix(".resumectl-uploads") && !$0.hasSuffix("/") }
                .filter { path in
                    var isFolder: ObjCBool = false
                    return FileManager.default.fileExists(atPath: folder.path(path), isDirectory: &isFolder)
                        && !isFolder.boolValue
                }.sorted()
        }

        deinit { serve?.send(signal: SIGKILL) }
    }

    /// POST of a partial upload of `length` bytes; its URL path.
    static func createPartial(_ peer: Peer, length: Int) async throws -> String {
        let created = try await CurlExchange.run(
            ["-X", "POST"] + tus + [
                "-H", "Upload-Concat: partial", "-H", "Upload-Length: \(length)", peer.base + "/in/",
            ])
        let location = try #require(created["location"], "\(created.heads) \(created.stderr)")
        #expect(created.status == 201)
        return location.hasPrefix("http")
            ? String(location.drop { $0 != "/" }.dropFirst(2).drop { $0 != "/" }) : location
    }

    static func patch(_ peer: Peer, _ path: String, file: String, offset: Int = 0) async throws -> CurlExchange {
        try await CurlExchange.run(
            ["-X", "PATCH"] + tus + [
                "-H", "Upload-Offset: \(offset)", "-H", "Content-Type: application/offset+octet-stream",
                "--data-binary", "@" + file, peer.base + path,
            ])
    }

    static func final(_ peer: Peer, _ paths: [String], name: String = "joined.bin") async throws -> CurlExchange {
        let filename = Data(name.utf8).base64EncodedString()
        return try await CurlExchange.run(
            ["-X", "POST"] + tus + [
                "-H", "Upload-Concat: final;" + paths.joined(separator: " "), "-H",
                "Upload-Metadata: filename \(filename)",
                peer.base + "/in/",
            ])
    }

    /// `sizes` pieces of one random file: the pieces' paths and the whole file's SHA-256.
    static func pieces(_ folder: TempDirectory, _ sizes: [Int], seed: UInt64) throws -> ([String], String) {
        let whole = randomBytes(count: sizes.reduce(0, +), seed: seed)
        var start = 0
        var paths: [String] = []
        for (index, size) in sizes.enumerated() {
            let path = folder.path("piece\(index)")
            try Data(whole[start..<start + size]).write(to: URL(fileURLWithPath: path))
            paths.append(path)
            start += size
        }
        return (paths, sha256(whole))
    }

    /// Four partial uploads sent at once; their URL paths in order.
    static func uploadPartials(_ peer: Peer, _ files: [String], sizes: [Int]) async throws -> [String] {
        var paths: [String] = []
        for size in sizes { paths.append(try await createPartial(peer, length: size)) }
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for (path, file) in zip(paths, files) { group.addTask { try await patch(peer, path, file: file).status } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(statuses == [204, 204, 204, 204], "\(statuses)")
        return paths
    }

    static let sizes = [7 * MiB + 5, 3 * MiB, 6 * MiB, MiB + 17]

    @Test(
        "four partial uploads sent in parallel, then the final one: the file is their bytes in order; HEAD, PATCH 403",
        arguments: ["folder", "s3"])
    func parallelThenFinal(store: String) async throws {
        let peer = try await Peer(store)
        let (files, digest) = try Self.pieces(peer.scratch, Self.sizes, seed: 5601)
        let paths = try await Self.uploadPartials(peer, files, sizes: Self.sizes)
        let partial = try await CurlExchange.run(["-I"] + Self.tus + [peer.base + paths[1]])
        #expect(partial["upload-concat"] == "partial" && partial["upload-offset"] == "\(Self.sizes[1])")
        #expect(try await peer.visible() == [], "a partial upload is no file")

        // The first URL absolute, as tus-js-client sends them.
        let final = try await Self.final(peer, [peer.base + paths[0]] + paths.dropFirst())
        #expect(final.status == 201, "\(final.heads)")
        let location = try #require(final["location"])
        #expect(try await peer.digest("in/joined.bin") == digest)
        #expect(try await peer.visible() == ["in/joined.bin"])

        let head = try await CurlExchange.run(["-I"] + Self.tus + [peer.base + location])
        #expect(head.status == 200)
        #expect(head["upload-concat"] == "final;" + paths.joined(separator: " "))
        #expect(head["upload-length"] == "\(Self.sizes.reduce(0, +))" && head["upload-offset"] == head["upload-length"])
        let patched = try await Self.patch(peer, location, file: files[3], offset: Self.sizes.reduce(0, +))
        #expect(patched.status == 403)

        // A partial upload may serve again.
        let again = try await Self.final(peer, [paths[3], paths[3]], name: "twice.bin")
        #expect(again.status == 201)
        let twice = try Data(contentsOf: URL(fileURLWithPath: files[3]))
        #expect(try await peer.digest("in/twice.bin") == sha256(twice + twice))
    }

    @Test(
        """
        refused: a final upload before its partial uploads are complete (400), with an unknown partial URL (404), \
        with Upload-Length (400), past --max-upload-size (413); nothing is stored
        """,
        arguments: ["folder", "s3"])
    func refusals(store: String) async throws {
        let peer = try await Peer(store, extra: ["--max-upload-size", "3000000"])
        let (files, _) = try Self.pieces(peer.scratch, [1_000_000, 2_500_000], seed: 5602)
        let done = try await Self.createPartial(peer, length: 1_000_000)
        #expect(try await Self.patch(peer, done, file: files[0]).status == 204)
        let half = try await Self.createPartial(peer, length: 2_500_000)
        #expect(try await Self.final(peer, [done, half]).status == 400, "the second partial upload is empty")
        #expect(try await Self.final(peer, [done, "/tus_upload/0123456789abcdef0123456789abcdef"]).status == 404)
        #expect(try await Self.final(peer, [done, "/elsewhere/file"]).status == 404)
        let withLength = try await CurlExchange.run(
            ["-X", "POST"] + Self.tus + [
                "-H", "Upload-Concat: final;" + done, "-H", "Upload-Length: 5", peer.base + "/in/",
            ])
        #expect(withLength.status == 400)
        #expect(try await Self.patch(peer, half, file: files[1]).status == 204)
        let tooLarge = try await Self.final(peer, [done, half])
        #expect(tooLarge.status == 413 && tooLarge["tus-max-size"] == "3000000", "\(tooLarge.heads)")
        #expect(try await peer.visible() == [])
        #expect(try await Self.final(peer, [half]).status == 201)
    }

    @Test("another login's partial uploads are unknown to a final upload (404)")
    func anotherLogin() async throws {
        let w = try Workspace()
        let passwords = w.path("htpasswd")
        for user in ["alice", "bob"] {
            let added = try await runProcess(
                "htpasswd", ["-B", "-b"] + (user == "alice" ? ["-c"] : []) + [passwords, user, "pw"])
            try #require(added.status == 0, "htpasswd (apache2-utils) is needed: \(added)")
        }
        let peer = try await Peer("folder", extra: ["--htpasswd", passwords])
        let alice = ["-u", "alice:pw"]
        let created = try await CurlExchange.run(
            ["-X", "POST"] + alice + Self.tus + [
                "-H", "Upload-Concat: partial", "-H", "Upload-Length: 0", peer.base + "/in/",
            ])
        let location = try #require(created["location"], "\(created.heads)")
        let path =
            location.hasPrefix("http") ? String(location.drop { $0 != "/" }.dropFirst(2).drop { $0 != "/" }) : location
        let asBob = try await CurlExchange.run(
            ["-X", "POST", "-u", "bob:pw"] + Self.tus + [
                "-H", "Upload-Concat: final;" + path, "-H", "Upload-Metadata: filename ZS5iaW4=", peer.base + "/in/",
            ])
        #expect(asBob.status == 404)
        let asAlice = try await CurlExchange.run(
            ["-X", "POST"] + alice + Self.tus + [
                "-H", "Upload-Concat: final;" + path, "-H", "Upload-Metadata: filename ZS5iaW4=", peer.base + "/in/",
            ])
        #expect(asAlice.status == 201, "\(asAlice.heads)")
        #expect(FileManager.default.fileExists(atPath: peer.folder.path("in/e.bin")))
    }

    @Test(
        """
        SIGKILL while the final upload is joined: no file or the whole one; after a restart the final upload's \
        retry makes it
        """,
        arguments: ["folder", "s3"])
    func killMidJoin(store: String) async throws {
        let peer = try await Peer(store, extra: ["--overwrite"])
        let sizes =
            store == "s3"
            ? [6 * Self.MiB, 6 * Self.MiB + 1, 6 * Self.MiB + 2, 6 * Self.MiB + 3]
            : [24 * Self.MiB, 24 * Self.MiB + 1, 24 * Self.MiB + 2, 24 * Self.MiB + 3]
        let (files, digest) = try Self.pieces(peer.scratch, sizes, seed: 5603)
        let paths = try await Self.uploadPartials(peer, files, sizes: sizes)
        let s3 = try peer.cluster.map {
            try ServeS3StoreTests.client($0.moto, bucket: $0.bucket, prefix: "inbox/", home: $0.home.path)
        }
        let final = Task { try await Self.final(peer, paths) }
        // Killed as soon as the final upload is under way (its record, or its multipart upload, exists).
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline, !Self.joining(peer, s3) {
            try await Task.sleep(for: .milliseconds(2))
        }
        try await peer.restart()
        _ = try? await final.value
        let left = try await peer.digest("in/joined.bin")
        #expect(left == nil || left == digest, "a part of the final upload became the file")
        let retried = try await Self.final(peer, paths)
        #expect(retried.status == 201, "\(retried.heads)")
        #expect(try await peer.digest("in/joined.bin") == digest)
    }

    /// Whether a final upload's join has begun: a record of it in the folder's store, or a multipart upload
    /// on its key in S3.
    /// S3 is asked in process: a boto3 call per look would be slower than the join.
    static func joining(_ peer: Peer, _ s3: S3Client?) -> Bool {
        if let s3, let cluster = peer.cluster {
            let listed = try? s3.send("GET", key: "", query: [("uploads", "")])
            let body = String(decoding: listed?.body ?? [], as: UTF8.self)
            return body.contains("<Key>\(cluster.key("in/joined.bin"))</Key>")
        }
        let store = peer.folder.path(".resumectl-uploads")
        return (try? FileManager.default.contentsOfDirectory(atPath: store))?.contains { $0.hasSuffix(".json") }
            ?? false
    }
}
