import Glibc
import FoundationEssentials

/// The store at start, kept apart from its day-to-day writes: a restart must continue every upload
/// it can, say in one line each why it drops one it cannot, and bring back the finished uploads whose
/// URLs still answer; what an earlier release left behind goes too.
extension UploadStore {
    func recover(into table: UploadTable, replacing: Bool, log: (String) -> Void) {
        for record in recover(now: WallClock.millis(), replacing: replacing, log: log) { table.insert(record) }
        for record in finishedUploads(now: WallClock.millis()) { table.insert(record, finished: true) }
        let swept = Self.sweepLegacy(root: root)
        if swept > 0 { log("removed \(swept) unfinished upload file(s) left by an earlier release") }
    }

    /// Reads every record at start: what can be continued is returned; what cannot (a record that
    /// does not parse, a plain upload, an expired one, data without a record) is removed with one log
    /// line each; data longer than its record is cut back; a finishing upload is finished.
    func recover(now: Int64, replacing: Bool, log: (String) -> Void) -> [UploadRecord] {
        var records: [UploadRecord] = []
        var dataIDs: Set<String> = []
        var recordIDs: [String] = []
        var doneIDs: Set<String> = []
        for name in Self.names(in: folder) {
            if name.hasSuffix(".tmp") {
                unlink(folder + "/" + name)
            } else if name.hasSuffix(".data") {
                dataIDs.insert(String(name.dropLast(5)))
            } else if name.hasSuffix(".done") {
                // A finished tus partial upload keeps its data beside it.
                doneIDs.insert(String(name.dropLast(5)))
            } else if name.hasSuffix(".json") {
                recordIDs.append(String(name.dropLast(5)))
            }
        }
        for id in recordIDs.sorted() {
            dataIDs.remove(id)
            if let record = recover(id, now: now, replacing: replacing, log: log) { records.append(record) }
        }
        for id in dataIDs.subtracting(doneIDs).sorted() {
            unlink(dataPath(id))
            log("upload \(id): data without a record, removed")
        }
        return records
    }

    private func recover(_ id: String, now: Int64, replacing: Bool, log: (String) -> Void) -> UploadRecord? {
        guard let bytes = Self.contents(of: recordPath(id)),
            var record = try? JSONDecoder().decode(UploadRecord.self, from: bytes),
            record.version == 1, record.id == id, Self.isValidID(Substring(id)), !record.target.isEmpty
        else {
            remove(id)
            log("upload \(id): its record does not parse, removed")
            return nil
        }
        let name = "/" + record.target.joined(separator: "/")
        var info = stat()
        let size: Int64? = stat(dataPath(id), &info) == 0 ? Int64(info.st_size) : nil
        if record.kind == .plain {
            remove(id)
            log("upload \(name): a plain upload cannot be continued, removed")
            return nil
        }
        // Before the data's check: a finishing upload's data may already be in place (renamed, or
        // linked and unlinked before its record said so); finishing it makes its hook due.
        if record.phase == .finishing {
            do {
                try finish(record, replacing: replacing)
                log("upload \(name): finished after a restart")
                return nil
            } catch {
                log("upload \(name): cannot be finished (\(error.reason)), kept")
                return record
            }
        }
        guard let size else {
            remove(id)
            log("upload \(name): its data is missing, removed")
            return nil
        }
        if record.expires <= now {
            remove(id)
            log("upload \(name): expired, removed")
            return nil
        }
        if record.isFinal && !record.isComplete {
            // Its client, never told of it, asks again; its partial uploads are still there.
            remove(id)
            log("upload \(name): a tus concatenation cut short, removed")
            return nil
        }
        if size > record.offset {
            // The next append cuts them off again when it opens the data (``openData(_:at:)``): a failure
            // here costs nothing but the word in the log.
            let cut = truncate(dataPath(id), off_t(record.offset)) == 0 ? "cut off" : "to be cut off by the next append"
            log("upload \(name): \(size - record.offset) bytes past the durable offset \(record.offset) \(cut)")
        } else if size < record.offset {
            // Should never happen (the data is synced before its record); report only what is held.
            record.offset = size
            try? save(record)
            log("upload \(name): data shorter than its record, continuing from \(size)")
        }
        // Every byte of a tus upload durable, the process gone before its record said `finishing`: a HEAD
        // may already have answered Upload-Offset = Upload-Length, which a tus client (tus-js-client, the
        // folder page) takes as done and follows with no request at all. Only placing the file is left.
        if record.kind == .tus && record.isComplete {
            do {
                try finish(record, replacing: replacing)
                log("upload \(name): every byte was there, finished after a restart")
                return nil
            } catch {
                log("upload \(name): every byte is there but it cannot be finished (\(error.reason)), kept")
            }
        }
        return record
    }

    /// The finished uploads whose URLs still answer (until they expire; expired ones are removed).
    func finishedUploads(now: Int64) -> [UploadRecord] {
        var records: [UploadRecord] = []
        for name in Self.names(in: folder) where name.hasSuffix(".done") {
            let id = String(name.dropLast(5))
            guard let bytes = Self.contents(of: donePath(id)),
                let record = try? JSONDecoder().decode(UploadRecord.self, from: bytes),
                record.version == 1, record.id == id, record.expires > now
            else {
                remove(id)
                continue
            }
            records.append(record)
        }
        return records
    }

    static func names(in folder: String) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
    }

    static func contents(of path: String) -> Data? {
        try? Data(contentsOf: URL(filePath: path))
    }

    /// Removes the temp files an earlier release left beside upload destinations (`.NAME.upload-HEX`):
    /// it kept upload state in memory only, so nothing can ever complete them. Returns how many went.
    static func sweepLegacy(root: String) -> Int {
        var removed = 0
        var folders = [root]
        while let folder = folders.popLast() {
            for name in names(in: folder) where name != folderName {
                let path = folder + "/" + name
                var info = stat()
                guard lstat(path, &info) == 0 else { continue }
                if info.st_mode & S_IFMT == S_IFDIR {
                    folders.append(path)
                } else if info.st_mode & S_IFMT == S_IFREG, name.hasPrefix("."), name.contains(".upload-"),
                    unlink(path) == 0
                {
                    removed += 1
                }
            }
        }
        return removed
    }
}
