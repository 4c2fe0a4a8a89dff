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
