import Foundation
import Testing
@testable import ResumeKit

/// The pure rules of a folder upload: names → targets, the tree walk's choices, `--skip-existing`'s
/// comparison, the worst exit status, and the ledger of finished files surviving a torn last line.
@Suite struct UploadBatchTests {
    let dir = scratchPath("rk-batch")

    @Test func namesBecomeKeysAsTheyAreAndURLPathsPercentEncoded() throws {
        let name = "a b/#1/50%+x/Grüße~_-.bin"
        #expect(BatchNaming.target("s3://bkt/pre/", relative: name) == "s3://bkt/pre/" + name)
        #expect(
            BatchNaming.target("http://h/up/", relative: name)
                == "http://h/up/a%20b/%231/50%25%2Bx/Gr%C3%BC%C3%9Fe~_-.bin")
        #expect(BatchNaming.name(Array("ok name".utf8)) == "ok name")
        #expect(BatchNaming.name([0x66, 0x0A, 0x67]) == nil)
        #expect(BatchNaming.name([0x66, 0xFF]) == nil)
        #expect(!BatchNaming.fits(String(repeating: "x", count: 1025)))
    }

    @Test func targetMustNameAFolder() throws {
        try BatchNaming.checkTarget("s3://bucket/prefix/")
        try BatchNaming.checkTarget("s3://bucket/")
        try BatchNaming.checkTarget("https://h/up/")
        for bad in ["s3://bucket/key", "https://h/up", "ftp://h/up/", "https://h/up/?a=b/"] {
            #expect(throws: TransferError.self, "\(bad)") { try BatchNaming.checkTarget(bad) }
        }
    }

    @Test func treeTakesRegularFilesSkipsLinksAndSpecialFilesAndRefusesBadNames() throws {
        let fm = FileManager.default
        try fm.createDirectory(atPath: dir + "/a/b/c", withIntermediateDirectories: true)
        defer { try? fm.removeItem(atPath: dir) }
        #expect(fm.createFile(atPath: dir + "/a/b/c/deep.txt", contents: Data("x".utf8)))
        #expect(fm.createFile(atPath: dir + "/empty", contents: Data()))
        #expect(fm.createFile(atPath: dir + "/bad\u{1}name", contents: Data("y".utf8)))
        try fm.createSymbolicLink(atPath: dir + "/link", withDestinationPath: dir + "/empty")
        try fm.createSymbolicLink(atPath: dir + "/a/loop", withDestinationPath: dir + "/a")
        #expect(mkfifo(dir + "/fifo", 0o600) == 0)
        let tree = try BatchTree(root: dir, follow: false)
        #expect(tree.files.map(\.relative) == ["a/b/c/deep.txt", "empty"])
        #expect(tree.files.map(\.size) == [1, 0])
        #expect(tree.skipped.count == 3, "\(tree.skipped)")
        #expect(tree.refused.count == 1 && tree.refused[0].contains("refused"), "\(tree.refused)")
        let followed = try BatchTree(root: dir, follow: true)
        #expect(followed.files.map(\.relative) == ["a/b/c/deep.txt", "empty", "link"], "a loop is walked once")
        #expect(throws: TransferError.self) { try BatchTree(root: dir + "/missing", follow: false) }
    }

    @Test func skipNeedsTheSameSizeAndAChecksumNeverTheSizeAlone() throws {
        let body = Array("hello world".utf8)
        func digest(_ a: DigestAlgorithm, _ r: BodyRange) -> [UInt8] {
            var h = a.hasher()
            body[Int(r.offset)..<Int(r.offset + r.length)].withUnsafeBytes { h.update(bufferPointer: $0) }
            return h.digestBytes()
        }
        func same(_ fields: [(String, String)], status: Int = 200, size: Int64 = 11, partSize: Int64 = 100) throws
            -> Bool
        {
            try BatchSkip.same(
                head(status, [("Content-Length", "11")] + fields), size: size, partSize: partSize, digest: digest)
        }
        let whole = BodyRange(offset: 0, length: 11)
        let crc = Data(digest(.crc32c, whole)).base64EncodedString()
        let sha = Data(digest(.sha256, whole)).base64EncodedString()
        #expect(try same([("x-amz-checksum-crc32c", crc)]))
        #expect(try !same([("x-amz-checksum-crc32c", "AAAAAA==")]))
        #expect(try !same([("x-amz-checksum-crc32c", crc)], size: 12))
        #expect(try !same([("x-amz-checksum-crc32c", crc)], status: 404))
        #expect(try same([("Repr-Digest", "sha-256=:\(sha):")]))
        #expect(try same([("Digest", "SHA-256=\(sha)")]))
        #expect(try !same([]), "a size alone proves nothing")
        let md5 = digest(.md5, whole).hex
        #expect(try same([("ETag", "\"\(md5)\""), ("x-amz-request-id", "1")]))
        #expect(try !same([("ETag", "\"\(md5)\"")]), "an ETag off S3 is no MD5")
        // Parts of 5 bytes: 5 + 5 + 1. S3's composite CRC32C and multipart ETag of exactly those parts.
        let parts = [
            BodyRange(offset: 0, length: 5), BodyRange(offset: 5, length: 5), BodyRange(offset: 10, length: 1),
        ]
        func combined(_ a: DigestAlgorithm) -> [UInt8] {
            var h = a.hasher()
            parts.flatMap { digest(a, $0) }.withUnsafeBytes { h.update(bufferPointer: $0) }
            return h.digestBytes()
        }
        let composite = Data(combined(.crc32c)).base64EncodedString()
        #expect(try same([("x-amz-checksum-crc32c", composite + "-3")], partSize: 5))
        #expect(try !same([("x-amz-checksum-crc32c", composite + "-2")], partSize: 5))
        #expect(try same([("ETag", "\"\(combined(.md5).hex)-3\""), ("x-amz-request-id", "1")], partSize: 5))
        #expect(
            try !same([("ETag", "\"\(combined(.md5).hex)-3\""), ("x-amz-request-id", "1")], partSize: 4),
            "other part boundaries")
    }

    @Test func theWorstFailureDecidesTheExitStatus() {
        // The one rule of many transfers (ExitStatus.combined), which a batch's files share with -i and wait.
        #expect(ExitStatus.combined([75, 1, 74]) == 1)
        #expect(ExitStatus.combined([75, 74]) == 74)
        #expect(ExitStatus.combined([75, 66]) == 66)
        #expect(ExitStatus.combined([75]) == 75)
        #expect(ExitStatus.combined([]) == 0)
        #expect(ExitStatus.combined([0, 0]) == 0)
        #expect(ExitStatus.combined([65, 73]) == 65)
        #expect(ExitStatus.combined([130, 75]) == 130)
        #expect(ExitStatus.combined([75, 22]) == 22, "a status the rule does not name is a failure for good")
    }

    @Test func ledgerKeepsFinishedFilesAndIgnoresATornLine() throws {
        let state = StateDirectory(dir)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var st = stat()
        st.st_size = 3
        st.st_ino = 9
        let ledger = try BatchLedger(state: state, id: "b-1", order: ["a/x y", "b", "c"])
        try ledger.add("a/x y", BatchLedger.Stamp(st), now: false)
        try ledger.add("b", BatchLedger.Stamp(st), now: true)
        try ledger.close()
        let fd = open(state.batchLog("b-1"), O_WRONLY | O_APPEND)
        _ = "{\"path\":\"c\",\"sta".withCString { write(fd, $0, strlen($0)) }
        close(fd)
        let done = BatchLedger.earlier(state: state, id: "b-1").done
        #expect(Set(done.keys) == ["a/x y", "b"])
        #expect(done["b"] == BatchLedger.Stamp(st))
    }

    /// Files are claimed as begun, 64 at a time and durably, before any is sent: after a kill, only a claimed
    /// file without a finished line may have reached the server unrecorded (the next run asks the target).
    @Test func claimsBoundTheFilesAKillLeavesInDoubt() throws {
        let state = StateDirectory(dir)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let order = (0..<200).map { String(format: "f%03d", $0) }
        let ledger = try BatchLedger(state: state, id: "b-2", order: order)
        #expect(BatchLedger.earlier(state: state, id: "b-2").begun == nil)
        try ledger.begin(0)
        // Durable at once, before any line of a finished file: read without closing the ledger.
        #expect(BatchLedger.earlier(state: state, id: "b-2").begun == order[63])
        for i in 1..<64 { try ledger.begin(i) }
        #expect(BatchLedger.earlier(state: state, id: "b-2").begun == order[63], "no claim while inside the last one")
        try ledger.begin(64)
        try ledger.add(order[3], BatchLedger.Stamp(stat()), now: false)
        try ledger.close()
        let earlier = BatchLedger.earlier(state: state, id: "b-2")
        #expect(earlier.begun == order[127])
        #expect(!earlier.mayHaveSent(order[3]), "finished")
        #expect(earlier.mayHaveSent(order[4]) && earlier.mayHaveSent(order[127]))
        #expect(!earlier.mayHaveSent(order[128]), "never begun")

        // A second run claims again from its first file; the furthest claim of all runs counts.
        let again = try BatchLedger(state: state, id: "b-2", order: order)
        try again.begin(0)
        try again.close()
        #expect(BatchLedger.earlier(state: state, id: "b-2").begun == order[127])
        let tail = try BatchLedger(state: state, id: "b-2", order: order)
        try tail.begin(190)
        try tail.close()
        #expect(BatchLedger.earlier(state: state, id: "b-2").begun == order[199], "a claim ends with the tree")
    }

    /// One budget of requests for the batch: a request beside others starts only when one is free, the
    /// first waits for one, and a pause ends that wait.
    @Test func requestBudgetIsSharedAndAPauseEndsTheWait() {
        let budget = RequestBudget(2)
        let never = Cancellation()
        #expect(budget.take(waiting: false, unless: never) && budget.take(waiting: true, unless: never))
        #expect(!budget.take(waiting: false, unless: never), "both taken")
        let paused = Cancellation()
        paused.stop(.pause)
        #expect(!budget.take(waiting: true, unless: paused))
        budget.give()
        #expect(budget.take(waiting: true, unless: paused), "a free request is taken even when stopping")
        budget.give()
        budget.give()
        #expect(budget.take(waiting: false, unless: never) && budget.take(waiting: false, unless: never))
    }

    /// A batch's file token names its batch (an optional field: tokens without it load as before); `resume
    /// --all` continues the batch, never the file alone.
    @Test func aFileTokenBelongsToItsBatch() throws {
        let store = TokenStore(directory: dir)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try store.ensureDirectory()
        let source = ResumeToken.SourceIdentity(path: "/d/f", size: 9, mtime: 1, inode: 2, edgeHash: "")
        var part = ResumeToken.UploadPart(source: source, wire: .ietf(.newest))
        let single = ResumeToken(id: "u-0000000000000001", url: "http://h/f", headers: [], transfer: .upload(part))
        part.batch = "b-00000000000000aa"
        let file = ResumeToken(id: "u-0000000000000002", url: "http://h/d/f", headers: [], transfer: .upload(part))
        try store.save(single)
        try store.save(file)
        #expect(try store.load(file.id).upload?.batch == "b-00000000000000aa")
        #expect(try store.load(single.id).upload?.batch == nil)
        #expect(!TokenStore.json(single).contains("batch"), "absent when not in a batch")
        var record = BatchRecord(
            BatchRequest(folder: "/d", target: "http://h/d/", upload: UploadRequest(filePath: "/d", url: "http://h/d/"))
        )
        record.id = "b-00000000000000aa"
        try BatchLedger.save(record, state: store.state)
        #expect(Supervisor.resumable(store: store) == [single.id, record.id])
    }

    @Test func recordGivesBackTheRequestWithoutSecrets() throws {
        let upload = UploadRequest(
            filePath: "/d", url: "s3://b/p/", headers: ["Authorization: Bearer x", "X-A: 1"],
            s3: S3Options(
                choices: S3Choices(region: "eu-west-1", endpoint: "http://127.0.0.1:9"), forcePathStyle: true,
                partSize: 5 << 20))
        let request = BatchRequest(folder: "/d", target: "s3://b/p/", upload: upload, parallel: 3, skipExisting: true)
        let record = BatchRecord(request)
        #expect(record.id == request.id && record.id.hasPrefix("b-"))
        #expect(record.headers == ["X-A: 1"])
        let again = record.request(headers: ["Authorization: Bearer y"])
        #expect(
            again.parallel == 3 && again.skipExisting && again.upload.s3.partSize == 5 << 20
                && again.upload.s3.forcePathStyle)
        #expect(again.upload.s3.choices.endpoint == "http://127.0.0.1:9")
        #expect(again.id == request.id)
        #expect(!TokenStore.json(record).contains("Bearer"))
    }
}
