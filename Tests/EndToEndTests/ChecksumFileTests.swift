import Foundation
import Testing

/// `download --checksum-file`: a published list of sums checks one file, a list's files, read from a file or
/// from the server itself (nginx).
@Suite struct ChecksumFileDownloadTests {
    static let size = 300_000

    @Test func aMatchingEntryPassesAndAWrongOneKeepsThePartAndExits65() async throws {
        let h = try Workspace()
        let good = try makeRandomFile(path: h.path("www/good.bin"), size: Self.size, seed: 1)
        _ = try makeRandomFile(path: h.path("www/bad.bin"), size: Self.size, seed: 2)
        let wrong = String(repeating: "0", count: 64)
        try "\(good)  good.bin\nSHA256 (bad.bin) = \(wrong)\n".write(
            toFile: h.path("www/SHA256SUMS"), atomically: true, encoding: .utf8)
        let nginx = try await NginxServer(root: h.path("www"))

        let ok = try await h.run([
            "download", nginx.url(for: "good.bin"), "--checksum-file", nginx.url(for: "SHA256SUMS"),
        ])
        #expect(ok.status == 0, "\(ok)")
        #expect(try sha256(file: h.out + "/good.bin") == good)

        let bad = try await h.run(["download", nginx.url(for: "bad.bin"), "--checksum-file", h.path("www/SHA256SUMS")])
        #expect(bad.status == 65, "\(bad)")
        #expect(bad.stderr.contains("checksum mismatch"))
        #expect(!h.exists(h.out + "/bad.bin") && h.size(h.out + "/bad.bin.part") == Int64(Self.size))
    }

    @Test func aListChecksEachFileAndSaysWhichItCannotCheck() async throws {
        let h = try Workspace()
        let one = try makeRandomFile(path: h.path("www/one.bin"), size: Self.size, seed: 3)
        _ = try makeRandomFile(path: h.path("www/two.bin"), size: Self.size, seed: 4)
        _ = try makeRandomFile(path: h.path("www/three.bin"), size: Self.size, seed: 5)
        try "\(one)  one.bin\n\(String(repeating: "f", count: 64))  two.bin\n".write(
            toFile: h.path("sums"), atomically: true, encoding: .utf8)
        let nginx = try await NginxServer(root: h.path("www"))
        let list = ["one.bin", "two.bin", "three.bin"].map { nginx.url(for: $0) }.joined(separator: "\n")
        try list.write(toFile: h.path("list"), atomically: true, encoding: .utf8)

        let r = try await h.run(["download", "-i", h.path("list"), "-o", h.out, "--checksum-file", h.path("sums")])
        #expect(r.status == 65, "\(r)")
        #expect(try sha256(file: h.out + "/one.bin") == one)
        #expect(h.exists(h.out + "/two.bin.part") && !h.exists(h.out + "/two.bin"))
        #expect(h.exists(h.out + "/three.bin"), "a file the sums do not list is fetched all the same")
        #expect(r.stderr.components(separatedBy: "lists no sum for three.bin").count == 2, "\(r.stderr)")
    }

    @Test func anUnreadableOrEmptyListStopsBeforeAnyByte() async throws {
        let h = try Workspace()
        _ = try makeRandomFile(path: h.path("www/f.bin"), size: Self.size, seed: 6)
        try "no sums here\n".write(toFile: h.path("empty"), atomically: true, encoding: .utf8)
        let nginx = try await NginxServer(root: h.path("www"))
        let missing = try await h.run(["download", nginx.url(for: "f.bin"), "--checksum-file", h.path("nothing")])
        #expect(missing.status == 66 && missing.stderr.split(separator: "\n").count == 1, "\(missing)")
        let empty = try await h.run(["download", nginx.url(for: "f.bin"), "--checksum-file", h.path("empty")])
        #expect(empty.status == 65 && empty.stderr.contains("lists no SHA-256 sum"), "\(empty)")
        #expect(!h.exists(h.out + "/f.bin") && !h.exists(h.out + "/f.bin.part"))
        #expect(nginx.accessLog().isEmpty)
        let both = try await h.run([
            "download", nginx.url(for: "f.bin"), "--checksum", "sha256=" + String(repeating: "0", count: 64),
            "--checksum-file", h.path("empty"),
        ])
        #expect(both.status == 64)
    }
}

/// `download URL/ --checksum-file`: each file of a folder (nginx's autoindex) checked by its entry, and a batch
/// that keeps the list's location in its record, so that `resume` checks too.
extension ChecksumFileDownloadTests {
    /// Files below `www/d` (relative path → seed), each `size` bytes; their digests.
    static func folder(_ w: Workspace, _ files: [String: UInt64], size: Int = Self.size) throws -> [String: String] {
        var digests: [String: String] = [:]
        for (relative, seed) in files {
            let path = w.path("www/d/" + relative)
            try FileManager.default.createDirectory(
                atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            digests[relative] = try makeRandomFile(path: path, size: size, seed: seed)
        }
        return digests
    }

    @Test func aFolderChecksEachFileByItsPathOrItsUniqueNameWithTheSumsServedBeside() async throws {
        let w = try Workspace()
        let files = try Self.folder(w, ["a.bin": 11, "sub/b.bin": 12, "sub/deeper/c.bin": 13])
        // By its path (with sha256sum's `./`), and by a name no other entry has, in a BSD line.
        let sums = [
            "\(files["a.bin"]!)  ./a.bin", "\(files["sub/b.bin"]!) *sub/b.bin",
            "SHA256 (c.bin) = \(files["sub/deeper/c.bin"]!)",
        ]
        try (sums.joined(separator: "\n") + "\n").write(
            toFile: w.path("www/d/SHA256SUMS"), atomically: true, encoding: .utf8)
        let nginx = try await NginxServer(root: w.path("www"), serverDirectives: "autoindex on;")
        let r = try await w.run([
            "download", nginx.url(for: "d/"), "-o", "dl", "--checksum-file", nginx.url(for: "d/SHA256SUMS"),
        ])
        #expect(r.status == 0, "\(r)")
        for (relative, digest) in files { #expect(try sha256(file: w.out + "/dl/" + relative) == digest) }
        #expect(w.exists(w.out + "/dl/SHA256SUMS"), "the list is a file of the folder like any other")
        #expect(!r.stderr.contains("lists no sum"), "the list itself is not said unlisted: \(r.stderr)")
        #expect(nginx.accessLog().filter { $0.contains("GET /d/SHA256SUMS") }.count == 2, "read once, fetched once")
    }

    @Test func aMismatchFailsThatFileWith65AndKeepsItsPartWhileTheOthersArrive() async throws {
        let w = try Workspace()
        let files = try Self.folder(w, ["good.bin": 21, "bad.bin": 22, "sub/unlisted.bin": 23])
        try "\(files["good.bin"]!)  good.bin\n\(String(repeating: "0", count: 64))  bad.bin\nno sum here\n".write(
            toFile: w.path("sums"), atomically: true, encoding: .utf8)
        let nginx = try await NginxServer(root: w.path("www"), serverDirectives: "autoindex on;")
        let r = try await w.run(["download", nginx.url(for: "d/"), "-o", "dl", "--checksum-file", "../sums"])
        #expect(r.status == 65, "\(r)")
        #expect(try sha256(file: w.out + "/dl/good.bin") == files["good.bin"])
        #expect(try sha256(file: w.out + "/dl/sub/unlisted.bin") == files["sub/unlisted.bin"])
        #expect(!w.exists(w.out + "/dl/bad.bin") && w.size(w.out + "/dl/bad.bin.part") == Self.size)
        #expect(r.stderr.contains("bad.bin: checksum mismatch"), "\(r.stderr)")
        #expect(r.stderr.components(separatedBy: "lists no sum for sub/unlisted.bin").count == 2, "\(r.stderr)")
        #expect(r.stderr.contains("1 line(s) carry no SHA-256 sum"), "\(r.stderr)")
        #expect(r.stderr.contains("failed 1 of 3 files"), "\(r.stderr)")
    }

    @Test func aKilledBatchResumedElsewhereChecksByTheListItsRecordNames() async throws {
        let w = try Workspace()
        // One at a time at 250 KiB/s: killed while big/a.bin arrives (12 s of it), before big/b.bin has a token, even
        // when a loaded machine kills seconds late.
        let files = try Self.folder(w, ["big/a.bin": 31, "big/b.bin": 32, "big/c.bin": 33], size: 3 << 20)
        try "\(files["big/a.bin"]!)  big/a.bin\n\(String(repeating: "f", count: 64))  big/b.bin\n".write(
            toFile: w.path("sums"), atomically: true, encoding: .utf8)
        let nginx = try await NginxServer(root: w.path("www"), serverDirectives: "autoindex on;")
        let p = try w.start([
            "download", nginx.url(for: "d/"), "-o", "dl", "--checksum-file", "../sums", "--parallel", "1", "--json",
            "--checkpoint-interval", "0.2", "--limit-rate", "250K",
        ])
        // A loaded machine may not have written big/a.bin's token 2 s after it started.
        let id = try await FolderUploadTests.killMidBatch(p) { try !w.tokens().isEmpty }
        #expect(try w.tokens().count == 1, "only big/a.bin had started: \((try? w.tokens()) ?? [])")
        let shown = try await w.run(["show", id])
        #expect(shown.stdout.contains("\"checksumFile\" : \"/") && shown.stdout.contains("/sums\""), "\(shown)")

        // From another folder: the record holds the list's absolute path.
        let r = try await runProcess(
            resumectlBinary, ["resume", id, "--state-dir", w.state], currentDirectory: w.path("www"),
            timeout: .seconds(120))
        #expect(r.status == 65, "\(r)")
        #expect(try sha256(file: w.out + "/dl/big/a.bin") == files["big/a.bin"])
        #expect(try sha256(file: w.out + "/dl/big/c.bin") == files["big/c.bin"])
        #expect(!w.exists(w.out + "/dl/big/b.bin") && w.size(w.out + "/dl/big/b.bin.part") == 3 << 20)
        #expect(r.stderr.contains("big/b.bin: checksum mismatch"), "\(r.stderr)")
        #expect(r.stderr.components(separatedBy: "lists no sum for big/c.bin").count == 2, "\(r.stderr)")
    }
}
