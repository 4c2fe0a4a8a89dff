import FoundationEssentials
import Glibc
import Synchronization

/// Result records on disk: `<state>/results/<id>.json`, mode 0600 in a 0700 folder, written like tokens
/// (temp file + fsync + rename). Records older than ``maxAge`` are pruned, at most once per process and once
/// every ``pruneInterval``.
public struct ResultStore: Sendable {
    public static let maxAge: Double = 7 * 86_400
    /// A script that runs one small transfer after another would otherwise stat every record on every run.
    public static let pruneInterval: Double = 3_600

    public let directory: String
    public var resultsDirectory: String { StateDirectory(directory).results }

    public init(directory: String) {
        self.directory = directory
    }

    public func path(forID id: String) -> String { StateDirectory(directory).result(id) }

    /// Writes a record atomically (and durably unless `durably` is false), replacing an earlier one of the same id.
    public func save(_ record: TransferRecord, durably: Bool = true) throws {
        try TokenStore.makeFolder(resultsDirectory)
        var record = record
        record.url = Redact.url(record.url)
        record.error = record.error.map(Redact.text)
        let data = try TokenStore.encoder.encode(record)
        try TokenStore.writeDurably(data, to: path(forID: record.id), folder: resultsDirectory, sync: durably)
        pruneOnce()
    }

    /// The record of `id`, or nil when there is none (or it cannot be read: records are advisory).
    public func load(id: String) -> TransferRecord? {
        guard !id.contains("/"), let data = FileManager.default.contents(atPath: path(forID: id)) else { return nil }
        return try? TokenStore.decoder.decode(TransferRecord.self, from: data)
    }

    /// Every readable record, oldest first.
    public func all() -> [TransferRecord] {
        pruneOnce()
        let names = (try? FileManager.default.contentsOfDirectory(atPath: resultsDirectory)) ?? []
        return names.filter { $0.hasSuffix(".json") }
            .compactMap { load(id: String($0.dropLast(5))) }
            .sorted { $0.endedAt < $1.endedAt }
    }

    /// Removes records (and temp files a crash left) last written more than `maxAge` seconds before `now`, by
    /// modification time; returns the names removed.
    @discardableResult
    public func prune(now: Date = Date(), maxAge: Double = ResultStore.maxAge) -> [String] {
        guard let dir = opendir(resultsDirectory) else { return [] }
        defer { closedir(dir) }
        let limit = now.timeIntervalSince1970 - maxAge
        var removed: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            guard name.hasSuffix(".json") || name.contains(".json.tmp.") else { continue }
            let file = resultsDirectory + "/" + name
            var st = stat()
            guard stat(file, &st) == 0, Double(st.st_mtim.tv_sec) < limit else { continue }
            if unlink(file) == 0 { removed.append(name) }
        }
        return removed
    }

    /// ``pruneIfDue(now:)`` the first time any store of this process asks for it.
    public func pruneOnce() {
        guard !Self.pruned.exchange(true, ordering: .relaxed) else { return }
        pruneIfDue()
    }

    /// ``prune(now:maxAge:)`` when the last one (the time of `results/.pruned`) is ``pruneInterval`` old; nil when not
    /// due.
    @discardableResult
    public func pruneIfDue(now: Date = Date()) -> [String]? {
        let marker = resultsDirectory + "/.pruned"
        var st = stat()
        if stat(marker, &st) == 0, Double(st.st_mtim.tv_sec) > now.timeIntervalSince1970 - Self.pruneInterval {
            return nil
        }
        let removed = prune(now: now)
        let fd = open(marker, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        if fd >= 0 {
            var times = [timespec](repeating: timespec(tv_sec: Int(now.timeIntervalSince1970), tv_nsec: 0), count: 2)
            futimens(fd, &times)
            close(fd)
        }
        return removed
    }

    private static let pruned = Atomic<Bool>(false)
}
