import Testing
@testable import ResumeKit

/// The plan of `resumectl sync` from scripted listings: what is copied, replaced, kept and deleted, and the
/// refusals that keep a bad listing from deleting anything.
@Suite struct SyncPlanTests {
    func f(
        _ path: String, _ size: Int64? = 10, _ mtime: Int64? = 1_000, step: Int64 = 1, _ hashes: [String: String] = [:]
    )
        -> SyncFile
    { SyncFile(path: path, size: size, mtime: mtime, mtimeStep: step, hashes: hashes) }

    func kinds(_ plan: SyncPlan) -> [String: SyncAction.Kind] {
        Dictionary(uniqueKeysWithValues: plan.actions.map { ($0.path, $0.kind) })
    }

    @Test func copiesWhatIsMissingReplacesWhatDiffersAndKeepsTheRest() throws {
        let source = [f("new"), f("same"), f("bigger", 11), f("newer", 10, 2_000), f("older", 10, 500)]
        let destination = [f("same"), f("bigger"), f("newer"), f("older"), f("extra")]
        let plan = try SyncPlan(source: source, destination: destination, options: SyncOptions())
        #expect(
            kinds(plan) == [
                "new": .copy, "same": .keep, "bigger": .replace, "newer": .replace, "older": .keep, "extra": .keep,
            ])
        #expect(
            plan.actions.map(\.path) == ["bigger", "new", "newer", "older", "same", "extra"], "sorted, extras last")
        #expect(plan.actions.first { $0.path == "extra" }?.reason.contains("--delete") == true)
        #expect(plan.actions.first { $0.path == "bigger" }?.reason == "size 11 at the source, 10 at the destination")
    }

    @Test func deleteRemovesExtrasOnlyWithTheFlag() throws {
        let plan = try SyncPlan(
            source: [f("a")], destination: [f("a"), f("b"), f("c/d")], options: SyncOptions(delete: true))
        #expect(kinds(plan) == ["a": .keep, "b": .delete, "c/d": .delete])
    }

    @Test func timesCompareToTheCoarserPrecision() throws {
        // An HTML listing's minute: 12:00:59 at the destination is not older than 12:00 at the source.
        let html = try SyncPlan(
            source: [f("x", 10, 60 * 100, step: 60)], destination: [f("x", 10, 60 * 100 + 59)], options: SyncOptions())
        #expect(kinds(html) == ["x": .keep])
        let later = try SyncPlan(
            source: [f("x", 10, 60 * 101, step: 60)], destination: [f("x", 10, 60 * 100 + 59)], options: SyncOptions())
        #expect(kinds(later) == ["x": .replace])
        let noTime = try SyncPlan(source: [f("x", 10, nil)], destination: [f("x")], options: SyncOptions())
        #expect(kinds(noTime) == ["x": .replace])
        let noSize = try SyncPlan(source: [f("x", nil)], destination: [f("x")], options: SyncOptions())
        #expect(kinds(noSize) == ["x": .replace])
    }

    @Test func sizeOnlyIgnoresTimes() throws {
        let plan = try SyncPlan(
            source: [f("x", 10, 9_999), f("y", 3)], destination: [f("x"), f("y")], options: SyncOptions(sizeOnly: true))
        #expect(kinds(plan) == ["x": .keep, "y": .replace])
    }

    @Test func checksumComparesAHashBothSidesOfferElseFallsBackOnce() throws {
        let options = SyncOptions(checksum: true)
        // Same size and time, other content: only the hash tells.
        let plan = try SyncPlan(
            source: [f("a", 10, 1_000, ["md5": "11", "sha256": "aa"]), f("b", 10, 1_000, ["sha256": "bb"]), f("c")],
            destination: [f("a", 10, 1_000, ["md5": "22"]), f("b", 10, 2_000, ["sha256": "bb"]), f("c")],
            options: options)
        #expect(kinds(plan) == ["a": .replace, "b": .keep, "c": .keep])
        #expect(plan.actions.first { $0.path == "a" }?.reason == "md5 differs")
        #expect(plan.noHash, "c had no hash on either side: size and time decided")
        let hashed = try SyncPlan(
            source: [f("a", 10, 1_000, ["md5": "11"])], destination: [f("a", 10, 1_000, ["md5": "11"])],
            options: options)
        #expect(!hashed.noHash && kinds(hashed) == ["a": .keep])
    }

    @Test func anEmptyOrIncompleteSourceNeverDeletes() throws {
        let destination = [f("a"), f("b")]
        #expect(throws: TransferError.self) {
            try SyncPlan(source: [], destination: destination, options: SyncOptions(delete: true))
        }
        do {
            _ = try SyncPlan(
                source: [f("a")], destination: destination, sourceComplete: false, options: SyncOptions(delete: true))
            Issue.record("an incomplete listing with --delete must be refused")
        } catch {
            #expect(error.exitStatus == 65 && error.message.contains("incomplete"), "\(error.message)")
        }
        // Without --delete an empty source copies nothing and deletes nothing: no refusal.
        let calm = try SyncPlan(source: [], destination: destination, sourceComplete: false, options: SyncOptions())
        #expect(calm.actions.allSatisfy { $0.kind == .keep })
        // Nothing to delete: an empty source is no danger.
        #expect(try SyncPlan(source: [], destination: [], options: SyncOptions(delete: true)).actions.isEmpty)
    }

    @Test func maxDeleteRefusesTheWholeRun() throws {
        let destination = (0..<5).map { f("x\($0)") }
        do {
            _ = try SyncPlan(
                source: [f("keep")], destination: destination, options: SyncOptions(delete: true, maxDelete: 4))
            Issue.record("5 deletes are more than --max-delete 4")
        } catch {
            #expect(error.exitStatus == 1 && error.message.contains("--max-delete 4"), "\(error.message)")
        }
        let plan = try SyncPlan(
            source: [f("keep")], destination: destination, options: SyncOptions(delete: true, maxDelete: 5))
        #expect(plan.actions.count { $0.kind == .delete } == 5)
    }

    @Test func theBatchRecordKeepsTheSyncSoResumeRunsIt() throws {
        let sync = SyncOptions(delete: true, checksum: true, maxDelete: 7)
        let up = BatchRequest(
            folder: "/d", target: "http://h/p/", upload: UploadRequest(filePath: "/d", url: "http://h/p/"), sync: sync)
        let down = FolderRequest(
            url: "http://h/p/", folder: "/d", template: DownloadRequest(url: "http://h/p/"), sync: sync)
        for record in [BatchRecord(up), BatchRecord(down)] {
            let stored = try TokenStore.decoder.decode(BatchRecord.self, from: try TokenStore.encoder.encode(record))
            #expect(stored.sync == sync)
            #expect((stored.folderRequest(headers: [])?.sync ?? stored.request(headers: []).sync) == sync)
        }
        // A folder batch's record says nothing of a sync, as before.
        let plain = try TokenStore.encoder.encode(
            BatchRecord(
                BatchRequest(
                    folder: "/d", target: "http://h/p/", upload: UploadRequest(filePath: "/d", url: "http://h/p/"))))
        #expect(!String(decoding: plain, as: UTF8.self).contains("sync"))
    }
}
