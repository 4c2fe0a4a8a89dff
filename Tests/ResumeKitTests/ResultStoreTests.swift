import Foundation
import Testing
@testable import ResumeKit

@Suite struct ResultStoreTests {
    let dir = scratchPath("rk-results")

    var store: ResultStore { ResultStore(directory: dir) }

    static func sample(id: String = "d-0123456789abcdef", outcome: TransferRecord.Outcome = .done) -> TransferRecord {
        TransferRecord(
            id: id, kind: .download, outcome: outcome, exit: outcome == .done ? 0 : 75, resumable: outcome == .paused,
            url: "https://example.com/big.iso", path: "/data/big.iso", bytes: 1_000,
            sha256: String(repeating: "a", count: 64),
            error: outcome == .done ? nil : "paused at 1000 bytes", endedAt: Date(timeIntervalSince1970: 1_800_000_000))
    }

    @Test func writeAndReadBackWithPrivateModes() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try store.save(Self.sample())
        #expect(store.load(id: "d-0123456789abcdef") == Self.sample())
        let attrs = try FileManager.default.attributesOfItem(atPath: store.path(forID: "d-0123456789abcdef"))
        #expect((attrs[.posixPermissions] as? Int) == 0o600)
        let dirAttrs = try FileManager.default.attributesOfItem(atPath: store.resultsDirectory)
        #expect((dirAttrs[.posixPermissions] as? Int) == 0o700)
        // No temp file is left; `.pruned` marks when the folder was last pruned.
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: store.resultsDirectory).filter { $0 != ".pruned" } == [
                "d-0123456789abcdef.json"
            ])
    }

    @Test func aLaterEndReplacesTheRecord() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try store.save(Self.sample(outcome: .paused))
        try store.save(Self.sample(outcome: .done))
        #expect(store.load(id: "d-0123456789abcdef")?.outcome == .done)
        #expect(store.all().count == 1)
    }

    @Test func missingAndForeignIdsAreNil() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(store.load(id: "d-ffffffffffffffff") == nil)
        #expect(store.load(id: "../tokens/x") == nil)
        try FileManager.default.createDirectory(atPath: store.resultsDirectory, withIntermediateDirectories: true)
        try Data("{not json".utf8).write(to: URL(fileURLWithPath: store.path(forID: "d-broken")))
        #expect(store.load(id: "d-broken") == nil)
    }

    @Test func recordsOlderThanSevenDaysArePruned() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try store.save(Self.sample(id: "d-old"))
        try store.save(Self.sample(id: "d-new"))
        try store.save(Self.sample(id: "d-edge"))
        let now = Date()
        try FileManager.default.setAttributes(
            [.modificationDate: now.addingTimeInterval(-8 * 86_400)], ofItemAtPath: store.path(forID: "d-old"))
        try FileManager.default.setAttributes(
            [.modificationDate: now.addingTimeInterval(-6.9 * 86_400)], ofItemAtPath: store.path(forID: "d-edge"))
        #expect(store.prune(now: now) == ["d-old.json"])
        #expect(store.load(id: "d-old") == nil)
        #expect(store.load(id: "d-new") != nil)
        #expect(store.load(id: "d-edge") != nil)
        #expect(store.prune(now: now.addingTimeInterval(8 * 86_400)).sorted() == ["d-edge.json", "d-new.json"])
    }

    /// A script running one small transfer after another stats every record only once an hour, not every run.
    @Test func aPruneWaitsAnHourAfterTheLastOne() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try store.save(Self.sample(id: "d-old"))
        let now = Date()
        try FileManager.default.setAttributes(
            [.modificationDate: now.addingTimeInterval(-8 * 86_400)], ofItemAtPath: store.path(forID: "d-old"))
        // The process's first save prunes once: when that was this test's, it left a marker here.
        try? FileManager.default.removeItem(atPath: store.resultsDirectory + "/.pruned")
        #expect(store.pruneIfDue(now: now) == ["d-old.json"], "no marker yet: due")
        try store.save(Self.sample(id: "d-older"))
        try FileManager.default.setAttributes(
            [.modificationDate: now.addingTimeInterval(-9 * 86_400)], ofItemAtPath: store.path(forID: "d-older"))
        #expect(
            store.pruneIfDue(now: now.addingTimeInterval(ResultStore.pruneInterval - 60)) == nil,
            "pruned 59 minutes ago")
        #expect(store.load(id: "d-older") != nil)
        #expect(store.pruneIfDue(now: now.addingTimeInterval(ResultStore.pruneInterval + 60)) == ["d-older.json"])
    }

    @Test func noPasswordEntersARecord() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var record = Self.sample(outcome: .paused)
        record.url = "https://alice:s3cret@example.com/big.iso"
        record.error = "the server answered 404 for https://alice:s3cret@example.com/big.iso"
        try store.save(record)
        let text = try String(contentsOfFile: store.path(forID: record.id), encoding: .utf8)
        #expect(!text.contains("s3cret"))
        #expect(text.contains("https://alice@example.com/big.iso"), "the user name stays, the password goes")
        #expect(Redact.url("http://example.com/a@b") == "http://example.com/a@b")
        #expect(Redact.url("http://bob@example.com/x") == "http://bob@example.com/x")
        // The record's fields carry no headers at all: nothing of the request's Authorization can land here.
        let keys = try #require(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]).keys.sorted()
        #expect(
            keys == [
                "bytes", "endedAt", "error", "exit", "id", "kind", "outcome", "path", "resumable", "sha256", "url",
                "version",
            ])
    }

    @Test func theRecordSchema() throws {
        // Pure parsing lives in the CLI; the library's part is the record, so only the schema is locked here.
        let json = TokenStore.json(Self.sample())
        #expect(json.contains("\"outcome\" : \"done\""))
        #expect(json.contains("\"endedAt\" : \"2027-01-15T08:00:00Z\""))
    }
}
