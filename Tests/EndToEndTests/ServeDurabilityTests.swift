import Foundation
import Testing

@testable import ResumeServer

/// `serve` keeps its uploads: the built binary is killed with SIGKILL mid-upload and started again on
/// the same port and folder, and the client continues (the proxy in front counts what it sent); the
/// store's recovery cases at start, each with its one log line.
@Suite("serve durability")
struct ServeDurabilityTests {
    /// `resumectl serve FOLDER --port PORT`, started and waited for.
    static func startServe(folder: String, port: Int) async throws -> (RunningProcess, Int) {
        try await ServeProcess.start(folder: folder, port: port)
    }

    /// Kills `serve` with SIGKILL (it must be alive then) and starts it again on the same port and folder, with
    /// `extra` options; returns what the killed one logged.
    static func killAndRestart(
        _ serve: inout RunningProcess, folder: String, port: Int, _ extra: [String] = []
    ) async throws -> String {
        #expect(serve.isRunning, "serve was alive when killed")
        serve.send(signal: SIGKILL)
        let killed = try await serve.wait(timeout: .seconds(10))
        #expect(killed.signaled, "\(killed)")
        let log = serve.stderrSoFar
        (serve, _) = try await ServeProcess.start(folder: folder, port: port, extra)
        return log
    }

    /// Bytes in the store's data files (what the server holds of unfinished uploads).
    static func storedBytes(_ folder: String) -> Int {
        serveUploadLeftovers(folder).reduce(0) { total, name in
            let size = (try? FileManager.default.attributesOfItem(atPath: folder + "/" + name)[.size] as? Int) ?? 0
            return total + size
        }
    }

    @Test(
        """
        resumectl upload (IETF and tus) while serve is killed with SIGKILL twice: the file arrives, and the client \
        continued
        """,
        arguments: ["ietf", "tus"])
    func killedTwice(protocol name: String) async throws {
        let w = try Workspace()
        let size = 16 << 20
        let digest = try makeRandomFile(path: w.path("www/big.bin"), size: size, seed: name == "tus" ? 3101 : 3102)
        let folder = try w.dir.subdirectory("served")
        var (serve, port) = try await Self.startServe(folder: folder, port: 0)
        defer { serve.send(signal: SIGKILL) }
        let proxy = try FaultProxy(upstreamPort: port)
        let target = name == "tus" ? proxy.url(for: "in/") : proxy.url(for: "in/big.bin")
        let client = try w.start([
            "upload", w.path("www/big.bin"), target, "--protocol", name, "--limit-rate", "2M",
            "--retries", "100", "--retry-delay", "0.1",
        ])
        defer { client.send(signal: SIGKILL) }

        for fraction in [0.3, 0.6] {
            try await eventually(timeout: .seconds(60)) { Self.storedBytes(folder) >= Int(Double(size) * fraction) }
            _ = try await Self.killAndRestart(&serve, folder: folder, port: port)
        }
        let result = try await client.wait(timeout: .seconds(120))
        #expect(result.status == 0, "\(result) serve: \(serve.stderrSoFar)")
        #expect(try sha256(file: folder + "/in/big.bin") == digest)
        #expect(serveUploadLeftovers(folder).isEmpty)
        // IETF: at most a second at 2 MB/s (plus what sat in buffers) is sent again per kill; starting
        // over after the second kill alone would have cost 60% of the file again. tus: serve offers the
        // checksum extension, and a checksummed append counts whole or not at all, so a kill costs up to
        // one append (8 MiB) on top.
        let perKill = name == "tus" ? 11 << 20 : 3 << 20
        #expect(proxy.bytesUpstream < size + 2 * perKill, "\(proxy.bytesUpstream) bytes for a \(size)-byte file")
        let methods = proxy.connections.flatMap(\.requestLines).map { String($0.prefix { $0 != " " }) }
        #expect(methods.filter { $0 == "PATCH" }.count >= 2 && methods.contains("HEAD"), "\(methods)")
        #expect(methods.filter { $0 == "POST" }.count == 1, "the upload was created once: \(methods)")
    }

    @Test("tuspy (PyPI) uploads through serve killed with SIGKILL and started again: the file arrives, created once")
    func tuspyAcrossRestart() async throws {
        let w = try Workspace()
        let size = 24 << 20
        let digest = try makeRandomFile(path: w.path("www/t.bin"), size: size, seed: 3104)
        let folder = try w.dir.subdirectory("served")
        var (serve, port) = try await Self.startServe(folder: folder, port: 0)
        defer { serve.send(signal: SIGKILL) }
        let proxy = try FaultProxy(
            upstreamPort: port, plan: Array(repeating: Fault.pass.throttled(bytesPerSecond: 6 << 20), count: 256))
        let script = """
            import sys
            from tusclient import client
            c = client.TusClient(sys.argv[1])
            u = c.uploader(sys.argv[2], chunk_size=1 << 20, metadata={"filename": "t.bin", "filetype": \
            "application/octet-stream"},
                           retries=30, retry_delay=1)
            u.upload()
            print(u.url)
            """
        let uploader = try RunningProcess("python3", ["-c", script, proxy.url(for: "in/"), w.path("www/t.bin")])
        defer { uploader.send(signal: SIGKILL) }
        try await eventually(timeout: .seconds(60)) { Self.storedBytes(folder) >= size / 3 }
        let firstLog = try await Self.killAndRestart(&serve, folder: folder, port: port)
        let r = try await uploader.wait(timeout: .seconds(180))
        #expect(r.status == 0, "tuspy (make deps installs it): \(r)")
        #expect(try sha256(file: folder + "/in/t.bin") == digest)
        let posts = (firstLog + serve.stderrSoFar).split(separator: "\n").filter { $0.hasPrefix("POST /in/ 201") }
        #expect(posts.count == 1, "\(firstLog) \(serve.stderrSoFar)")
        #expect(proxy.bytesUpstream < size + 4 << 20, "\(proxy.bytesUpstream)")
    }

    @Test("the folder page in chromium goes on by itself after serve was killed and started again mid-upload")
    func pageContinuesAfterRestart() async throws {
        let w = try Workspace()
        let size = 48 << 20
        let digest = try makeRandomFile(path: w.path("www/clip.bin"), size: size, seed: 3103)
        let folder = try w.dir.subdirectory("served")
        try FileManager.default.createDirectory(atPath: folder + "/inbox", withIntermediateDirectories: true)
        var (serve, port) = try await Self.startServe(folder: folder, port: 0)
        defer { serve.send(signal: SIGKILL) }
        let proxy = try FaultProxy(
            upstreamPort: port, plan: Array(repeating: Fault.pass.throttled(bytesPerSecond: 12 << 20), count: 64))
        let browser = try RunningProcess(
            "python3", [ServeFolderPageTests.browser, "restart", proxy.url(for: "inbox/"), w.path("www/clip.bin")])
        defer { browser.send(signal: SIGKILL) }
        _ = try await browser.waitForLine(timeout: .seconds(120), where: { $0 == "midway" })
        let firstLog = try await Self.killAndRestart(&serve, folder: folder, port: port)
        let r = try await browser.wait(timeout: .seconds(300))
        let line = try #require(
            r.stdoutLines.last, "chromium, chromium-driver and selenium (make deps installs them): \(r)")
        let result = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(r)")
        #expect(result["final"] as? String == "done", "\(result) \(serve.stderrSoFar)")
        #expect(try sha256(file: folder + "/inbox/clip.bin") == digest)
        // One creation in both lives of the server: the page continued its upload after the restart.
        let posts = (firstLog + serve.stderrSoFar).split(separator: "\n").filter { $0.hasPrefix("POST /inbox/ 201") }
        #expect(posts.count == 1, "\(firstLog) \(serve.stderrSoFar)")
        #expect(serve.stderrSoFar.contains("PATCH /tus_upload/"), "the restarted server took the rest")
        #expect(Double(proxy.bytesUpstream) < 1.25 * Double(size), "\(proxy.bytesUpstream) bytes through the proxy")
    }

    @Test(
        """
        at start: bad records, data without a record, data past the record, expiry, a finished upload whose path is \
        taken
        """
    )
    func recovery() throws {
        let root = try TempDirectory(prefix: "resumectl-recover")
        let store = try UploadStore(root: root.path)
        let now: Int64 = 1_800_000_000_000
        func record(
            _ id: String, offset: Int64, length: Int64? = 100, phase: UploadRecord.Phase = .receiving,
            expires: Int64 = now + 60_000,
            kind: UploadRecord.Kind = .ietf
        ) -> UploadRecord {
            UploadRecord(
                id: id, kind: kind, interop: 8, target: ["in", "\(id.prefix(4)).bin"], length: length, offset: offset,
                expires: expires, phase: phase)
        }
        func data(_ id: String, _ count: Int) throws {
            try Data(repeating: 7, count: count).write(to: URL(fileURLWithPath: store.dataPath(id)))
        }
        let ids = (0..<8).map { String(repeating: "\($0)", count: 32) }
        // 0: fine, its data longer than its record (cut back). 1: a record without data.
        try store.create(record(ids[0], offset: 0))
        try store.save(record(ids[0], offset: 40))
        try data(ids[0], 70)
        try store.save(record(ids[1], offset: 10))
        // 2: data without a record. 3: expired. 4: a truncated record. 5: a plain upload.
        try data(ids[2], 5)
        try store.create(record(ids[3], offset: 0, expires: now - 1))
        try store.create(record(ids[4], offset: 0))
        let recordPath = store.folder + "/\(ids[4]).json"
        let whole = try Data(contentsOf: URL(fileURLWithPath: recordPath))
        try whole.prefix(whole.count / 2).write(to: URL(fileURLWithPath: recordPath))
        try store.create(record(ids[5], offset: 0, kind: .plain))
        // 6: finishing, its path free: finished now. 7: finishing, its path taken: kept.
        try store.create(record(ids[6], offset: 100, phase: .finishing))
        try data(ids[6], 100)
        try store.create(record(ids[7], offset: 100, phase: .finishing))
        try data(ids[7], 100)
        try FileManager.default.createDirectory(atPath: root.path("in"), withIntermediateDirectories: true)
        try Data("theirs".utf8).write(to: URL(fileURLWithPath: root.path("in/7777.bin")))

        var lines: [String] = []
        let kept = store.recover(now: now, replacing: false, log: { lines.append($0) })
        #expect(kept.map(\.id).sorted() == [ids[0], ids[7]])
        #expect(kept.first { $0.id == ids[0] }?.offset == 40)
        #expect(FileManager.default.fileExists(atPath: store.dataPath(ids[0])))
        #expect((try FileManager.default.attributesOfItem(atPath: store.dataPath(ids[0]))[.size] as? Int) == 40)
        #expect(try Data(contentsOf: URL(fileURLWithPath: root.path("in/6666.bin"))).count == 100)
        #expect(try Data(contentsOf: URL(fileURLWithPath: root.path("in/7777.bin"))) == Data("theirs".utf8))
        for gone in [ids[1], ids[2], ids[3], ids[4], ids[5], ids[6]] {
            #expect(!FileManager.default.fileExists(atPath: store.dataPath(gone)), "\(gone)")
            #expect(!FileManager.default.fileExists(atPath: store.folder + "/\(gone).json"), "\(gone)")
        }
        let expected = [
            "bytes past the durable offset 40 cut off", "its data is missing", "data without a record", "expired",
            "does not parse", "a plain upload cannot be continued", "finished after a restart", "cannot be finished",
        ]
        for phrase in expected {
            #expect(lines.filter { $0.contains(phrase) }.count == 1, "\(phrase): \(lines)")
        }
        #expect(lines.count == expected.count, "\(lines)")
        // With --overwrite the kept one is finished at the next start.
        let again = store.recover(now: now, replacing: true, log: { _ in })
        #expect(again.map(\.id) == [ids[0]])
        #expect(try Data(contentsOf: URL(fileURLWithPath: root.path("in/7777.bin"))).count == 100)
    }

    @Test(
        """
        killed after a tus upload's last byte was durable, before its record said finishing: the start finishes it \
        (make soak-serve found it)
        """
    )
    func tusCompleteButNotFinishing() async throws {
        let root = try TempDirectory(prefix: "resumectl-recover-tus")
        let store = try UploadStore(root: root.path)
        let tusID = String(repeating: "e", count: 32)
        let draftID = String(repeating: "f", count: 32)
        let expires = WallClock.millis() + 600_000
        // A HEAD at this point answers Upload-Offset = Upload-Length: a tus client is done and sends nothing more.
        try store.create(
            UploadRecord(
                id: tusID, kind: .tus, target: ["in", "t.bin"], length: 5, offset: 5,
                metadata: "filename dC5iaW4=", expires: expires))
        try Data("12345".utf8).write(to: URL(fileURLWithPath: store.dataPath(tusID)))
        // The draft says when it is complete (Upload-Complete: ?1 on the request that ends it): kept for it.
        try store.create(
            UploadRecord(
                id: draftID, kind: .ietf, interop: 8, target: ["in", "d.bin"], length: 5, offset: 5,
                expires: expires))
        try Data("67890".utf8).write(to: URL(fileURLWithPath: store.dataPath(draftID)))

        let (serve, port) = try await Self.startServe(folder: root.path, port: 0)
        defer { serve.send(signal: SIGKILL) }
        try await eventually { serve.stderrSoFar.contains("/in/t.bin: every byte was there, finished after a restart") }
        #expect(try String(contentsOfFile: root.path("in/t.bin"), encoding: .utf8) == "12345")
        #expect(!FileManager.default.fileExists(atPath: root.path("in/d.bin")))
        #expect(FileManager.default.fileExists(atPath: store.dataPath(draftID)))
        // Its URL answers as a finished upload does, and the file is served.
        let head = try await runProcess(
            curlBinary, ["-sI", "-H", "Tus-Resumable: 1.0.0", "http://127.0.0.1:\(port)/tus_upload/\(tusID)"])
        #expect(
            head.stdout.hasPrefix("HTTP/1.1 200") && head.stdout.lowercased().contains("upload-offset: 5"), "\(head)")
        let get = try await runProcess(curlBinary, ["-sf", "http://127.0.0.1:\(port)/in/t.bin"])
        #expect(get.stdout == "12345", "\(get)")
    }

    @Test(
        """
        a finished upload's record stays as <id>.done until it expires, so its URL answers after a restart; a crash \
        after the link finishes it
        """
    )
    func finishedRecords() throws {
        let root = try TempDirectory(prefix: "resumectl-finished")
        let store = try UploadStore(root: root.path)
        let now: Int64 = 1_800_000_000_000
        let ids = (0..<4).map { String(repeating: "abcd"[String.Index(utf16Offset: $0, in: "abcd")], count: 32) }
        func record(_ id: String, expires: Int64 = now + 60_000, phase: UploadRecord.Phase = .receiving) -> UploadRecord
        {
            UploadRecord(
                id: id, kind: .tus, target: ["\(id.prefix(4)).bin"], length: 3, offset: 3,
                metadata: "filename YS5iaW4=",
                expires: expires, phase: phase)
        }
        // 0: finished now: its file in place, its data gone, its record kept as .done.
        try store.create(record(ids[0]))
        try Data("abc".utf8).write(to: URL(fileURLWithPath: store.dataPath(ids[0])))
        try store.finish(record(ids[0]), replacing: false)
        #expect(try String(contentsOfFile: root.path("aaaa.bin"), encoding: .utf8) == "abc")
        #expect(!FileManager.default.fileExists(atPath: store.dataPath(ids[0])))
        #expect(!FileManager.default.fileExists(atPath: store.folder + "/\(ids[0]).json"))
        #expect(FileManager.default.fileExists(atPath: store.donePath(ids[0])))
        // 1: finished, then expired. 2: killed after its link, before its data was unlinked. 3: after
        // its data was renamed into place (--overwrite), before its record said so.
        try store.create(record(ids[1], expires: now - 1))
        try Data("abc".utf8).write(to: URL(fileURLWithPath: store.dataPath(ids[1])))
        try store.finish(record(ids[1], expires: now - 1), replacing: false)
        try store.create(record(ids[2], phase: .finishing))
        try Data("abc".utf8).write(to: URL(fileURLWithPath: store.dataPath(ids[2])))
        try FileManager.default.linkItem(atPath: store.dataPath(ids[2]), toPath: root.path("cccc.bin"))
        try store.create(record(ids[3], phase: .finishing))
        try Data("abc".utf8).write(to: URL(fileURLWithPath: store.dataPath(ids[3])))
        try FileManager.default.moveItem(atPath: store.dataPath(ids[3]), toPath: root.path("dddd.bin"))

        var lines: [String] = []
        #expect(store.recover(now: now, replacing: false, log: { lines.append($0) }).isEmpty)
        #expect(
            lines.count == 2 && lines.contains { $0.contains("cccc.bin: finished after a restart") }
                && lines.contains { $0.contains("dddd.bin: finished after a restart") }, "\(lines)")
        let finished = store.finishedUploads(now: now)
        #expect(finished.map(\.id).sorted() == [ids[0], ids[2], ids[3]])
        #expect(finished.first { $0.id == ids[0] }?.metadata == "filename YS5iaW4=")
        #expect(!FileManager.default.fileExists(atPath: store.donePath(ids[1])), "expired")
        #expect(try String(contentsOfFile: root.path("cccc.bin"), encoding: .utf8) == "abc")
        #expect(try String(contentsOfFile: root.path("dddd.bin"), encoding: .utf8) == "abc")
        // Forgetting one (DELETE, or its expiry) leaves its file.
        store.remove(ids[0])
        #expect(!FileManager.default.fileExists(atPath: store.donePath(ids[0])))
        #expect(try String(contentsOfFile: root.path("aaaa.bin"), encoding: .utf8) == "abc")
        #expect(serveUploadLeftovers(root.path).isEmpty)
    }
}
