import Foundation
import NIOCore
import NIOPosix
import Testing

@testable import ResumeServer

/// The request bodies of a server's uploads share one memory budget (``BodyMemory``): with the disk
/// behind, `make soak-serve`'s 100 uploads each held their own 4 MiB mark, 378 MiB in all.
@Suite struct ServeBodyMemoryTests {
    @Test(
        """
        while the disk is behind, uploads together hold at most the budget beyond one read each; it all comes back \
        once written
        """
    )
    func uploadsShareOneBudget() async throws {
        let MiB = 1 << 20
        let root = try TempDirectory(prefix: "resumectl-bodymemory")
        let memory = BodyMemory(limit: 8 * MiB)
        let store = try UploadStore(root: root.path, bodyMemory: memory)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let pool = NIOThreadPool(numberOfThreads: 1)
        pool.start()
        let loop = group.next()
        let table = UploadTable(slots: nil)
        // The pool's one thread is busy until the gate opens: nothing is written meanwhile, as on a slow disk.
        let gate = DispatchSemaphore(value: 0)
        pool.submit { _ in gate.wait() }
        let records = try (0..<4).map { i in
            let record = UploadRecord(
                id: String(repeating: "\(i)", count: 32), kind: .tus, target: ["f\(i).bin"],
                expires: WallClock.millis() + 60_000)
            try store.create(record)
            return record
        }
        let box = NIOLoopBoundBox.makeEmptyBox(valueType: [UploadAppender].self, eventLoop: loop)
        let wants = try await loop.submit { () -> [Bool] in
            let appenders = records.map { record in
                UploadAppender(
                    store: store,
                    setup: UploadSinkSetup(
                        record: record, table: table, threadPool: pool, eventLoop: loop, limit: nil,
                        checkpoints: false, expiry: 60_000, settled: loop.makePromise()))
            }
            box.value = appenders
            for appender in appenders { appender.open() }
            // Three take 3 MiB each: under their own mark (4 MiB), 9 MiB together, over the budget.
            for appender in appenders.prefix(3) { _ = appender.receive(ByteBuffer(repeating: 7, count: 3 * MiB)) }
            let before = [appenders[0].wantsMore, appenders[3].wantsMore]
            // One that holds nothing still reads, once.
            _ = appenders[3].receive(ByteBuffer(repeating: 7, count: 64 << 10))
            return before + [appenders[3].wantsMore]
        }.get()
        #expect(wants == [false, true, false], "\(memory.bytes) bytes held")
        #expect(memory.bytes == 9 * MiB + (64 << 10))

        gate.signal()
        try await eventually(timeout: .seconds(30)) { memory.bytes == 0 }
        let after = try await loop.submit { () -> [Bool] in (box.value ?? []).map(\.wantsMore) }.get()
        #expect(after == [true, true, true, true])
        for (i, record) in records.enumerated() {
            let size = try FileManager.default.attributesOfItem(atPath: store.dataPath(record.id))[.size] as? Int
            #expect(size == (i < 3 ? 3 * MiB : 64 << 10), "every byte reached the data file of \(i)")
        }
        let ended = try await loop.submit { () -> [EventLoopFuture<Void>] in
            (box.value ?? []).map { appender in
                let done = loop.makePromise(of: Void.self)
                appender.end(keep: true) { _ in done.succeed() }
                return done.futureResult
            }
        }.get()
        for future in ended { try await future.get() }
        #expect(memory.bytes == 0)
        try await pool.shutdownGracefully()
        try await group.shutdownGracefully()
    }
}
