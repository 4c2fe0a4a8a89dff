import Testing

@testable import ResumeKit

private let a = String(repeating: "a", count: 64)
private let b = String(repeating: "b", count: 64)
private let c = String(repeating: "C", count: 64)

@Suite struct ChecksumFileTests {
    @Test func readsSha256sumAndBSDLines() throws {
        let text = """
            # SHA256SUMS for the release
            \(a)  ./debian-13.iso
            \(b) *tools/check.bin\r
            SHA256 (notes v2.txt) = \(c)
            MD5 (old.iso) = 0123456789abcdef0123456789abcdef
            \(a.prefix(40))  short.iso
            """
        let sums = try ChecksumFile(parsing: text)
        #expect(sums.sha256(for: "debian-13.iso") == a)
        #expect(sums.sha256(for: "tools/check.bin") == b)
        #expect(sums.sha256(for: "notes v2.txt") == c.lowercased())
        #expect(sums.skipped == 2)
        #expect(sums.sha256(for: "old.iso") == nil && sums.sha256(for: "short.iso") == nil)
    }

    @Test func aFileIsFoundByItsNameWhenTheListNamesOneSuch() throws {
        let sums = try ChecksumFile(parsing: "\(a)  dists/x/one.deb\n\(b)  dists/y/two.deb\n\(c)  dists/z/two.deb\n")
        #expect(sums.sha256(for: "one.deb") == a)
        #expect(sums.sha256(for: "two.deb") == nil, "two entries share the name: neither is guessed")
        #expect(sums.sha256(for: "dists/z/two.deb") == c.lowercased())
    }

    @Test func escapedNamesAreUnescaped() throws {
        let sums = try ChecksumFile(parsing: "\\\(a)  back\\\\slash\\nnewline\n")
        #expect(sums.sha256(for: "back\\slash\nnewline") == a)
    }

    @Test(arguments: ["", "# only a comment\n", "\(String(repeating: "a", count: 63))  x\n", "hello world\n"])
    func aListWithoutSumsIsRefused(text: String) {
        #expect(throws: TransferError.self) { try ChecksumFile(parsing: text) }
        do {
            _ = try ChecksumFile(parsing: text)
        } catch {
            #expect(error.exitStatus == 65)
        }
    }
}
