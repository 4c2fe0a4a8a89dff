import Foundation
import Synchronization
import Testing
@testable import ResumeKit

/// The publisher of a list's small files, on real files in a temp folder (no network).
@Suite struct BatchPublisherTests {
    let dir = scratchPath("rctl-publish")

    final class Completed: Sendable {
        let locations = Mutex<[String]>([])
    }

    private func finished(_ name: String, events: Completed) throws -> (Publish.Finished, PartFile) {
        let download = ResumeToken.DownloadPart(
            path: dir + "/" + name, committedBytes: 0, expectedSHA256: nil, onChange: nil)
        let part = try PartFile(path: download.partPath, keeping: 0)
        try Array("data of \(name)".utf8).withUnsafeBytes { try part.append($0) }
        let done = Publish.Finished(
            download: download, tokenID: "d-" + name, tokenOnDisk: false, bytes: part.length,
            sha256: nil,
            emit: { event in
                if case .completed(let location, _, _) = event { events.locations.withLock { $0.append(location) } }
            })
        return (done, part)
    }

    @Test func renamesEveryFileAfterOneSyncAndReportsTheOnesItCannot() throws {
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let publisher = BatchPublisher(store: TokenStore(directory: dir + "/state"))
        let events = Completed()
        for i in 0..<20 {
            let (done, part) = try finished("f\(i)", events: events)
            publisher.slot(i).submit(done, part: part)
        }
        // A folder in the way of the last one: its rename fails, its data stays in `g.part`.
        try FileManager.default.createDirectory(atPath: dir + "/g/inside", withIntermediateDirectories: true)
        let (bad, part) = try finished("g", events: events)
        publisher.slot(20).submit(bad, part: part)
        let failures = publisher.finish()

        #expect(failures.keys.sorted() == [20])
        #expect(failures[20]?.code == .cannotCreateOutput)
        for i in 0..<20 {
            #expect(try String(contentsOfFile: dir + "/f\(i)", encoding: .utf8) == "data of f\(i)")
            #expect(!FileManager.default.fileExists(atPath: dir + "/f\(i).part"))
        }
        #expect(try String(contentsOfFile: dir + "/g.part", encoding: .utf8) == "data of g")
        #expect(events.locations.withLock { $0 }.sorted() == (0..<20).map { dir + "/f\($0)" }.sorted())
    }

    /// Beside another program's backlog the workers sync their files themselves: such files are renamed
    /// without a second sync, in the same groups as the ones the publisher syncs.
    @Test func filesSyncedByTheirWorkersArePublishedBesideOthers() throws {
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let publisher = BatchPublisher(store: TokenStore(directory: dir + "/state"))
        let events = Completed()
        for i in 0..<10 {
            let (done, part) = try finished("s\(i)", events: events)
            let synced = i % 2 == 0
            if synced { _ = try part.sync() }
            publisher.slot(i).submit(done, part: part, synced: synced)
        }
        #expect(publisher.finish().isEmpty)
        for i in 0..<10 {
            #expect(try String(contentsOfFile: dir + "/s\(i)", encoding: .utf8) == "data of s\(i)")
            #expect(!FileManager.default.fileExists(atPath: dir + "/s\(i).part"))
        }
        #expect(events.locations.withLock { $0 }.count == 10)
    }
}

/// When a group of small files is made durable by one `syncfs`, and when file by file.
@Suite struct WritebackBacklogTests {
    private let meminfo = """
        MemTotal:       24563708 kB
        MemFree:        18000000 kB
        Dirty:           2404360 kB
        Writeback:         10240 kB
        AnonPages:        812344 kB
        WritebackTmp:          0 kB
        """

    @Test func readsDirtyAndWritebackFromMeminfo() {
        let kib: Int64 = 2_404_360 + 10_240
        #expect(WritebackBacklog.parse(meminfo) == kib * 1024)
        #expect(WritebackBacklog.parse("MemTotal: 1 kB\nDirty: 4 kB\n") == nil, "no Writeback line")
        #expect(WritebackBacklog.parse("") == nil)
        #expect(WritebackBacklog.current() != nil, "this machine's /proc/meminfo")
    }

    @Test func anotherProgramsGigabytesMakeEachFileSyncAlone() {
        let mib: Int64 = 1 << 20
        #expect(WritebackBacklog.prefersSyncfs(own: 48 * 1024, backlog: 2 * mib))
        #expect(
            WritebackBacklog.prefersSyncfs(own: 800 * mib, backlog: 820 * mib), "the backlog is mostly the group's own")
        #expect(!WritebackBacklog.prefersSyncfs(own: 48 * 1024, backlog: 2_400 * mib))
        #expect(!WritebackBacklog.prefersSyncfs(own: 0, backlog: 64 * mib + 1))
        #expect(WritebackBacklog.prefersSyncfs(own: 0, backlog: nil), "without /proc, as before")
    }
}
