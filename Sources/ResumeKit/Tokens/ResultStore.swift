import FoundationEssentials
import Glibc
import Synchronization

/// How a transfer ended, as kept in `results/<id>.json` after its token is gone (or beside it, while it
/// can still be resumed), so that a finished transfer still answers `resume`, `show`, `wait` and `list`.
public struct TransferRecord: Codable, Sendable, Equatable {
    public static let currentVersion = 1

    public enum Outcome: String, Codable, Sendable {
        /// The file is in place (download) or the server has it all (upload).
        case done
        /// Stopped by `pause`, SIGTERM, SIGHUP or Ctrl-C; the token is kept.
        case paused
        /// Failed; `resumable` says whether the token can continue it.
        case failed
        /// Forgotten by `cancel`: the token and the partial data are gone.
        case cancelled
    }

    public var version: Int
    public var id: String
    public var kind: ResumeToken.Kind
    public var outcome: Outcome
    /// The exit status the command that ran it gave (`wait` returns it).
    public var exit: Int32
    /// True when `resume` can continue it (the token is kept).
    public var resumable: Bool
    /// The URL, without any password in it.
    public var url: String
    /// Download: the file written. Upload: the source file.
    public var path: String?
    /// Bytes transferred in all (done) or committed so far (stopped).
    public var bytes: Int64?
    public var sha256: String?
    /// The error line, for a transfer that did not end done.
    public var error: String?
    public var endedAt: Date

    public init(
        id: String, kind: ResumeToken.Kind, outcome: Outcome, exit: Int32, resumable: Bool, url: String, path: String?,
        bytes: Int64? = nil, sha256: String? = nil, error: String? = nil, endedAt: Date = Date()
    ) {
        self.version = Self.currentVersion
        self.id = id
        self.kind = kind
        self.outcome = outcome
        self.exit = exit
        self.resumable = resumable
        self.url = Redact.url(url)
        self.path = path
        self.bytes = bytes
        self.sha256 = sha256
        self.error = error.map(Redact.text)
        self.endedAt = endedAt
    }

    /// What the command printed on stdout when this transfer succeeded: the path (download) or the URL (upload).
    public var resultLine: String { kind == .download ? (path ?? url) : url }
}

/// Result records on disk: `<state>/results/<id>.json`, mode 0600 in a 0700 folder, written like tokens
/// (temp file + fsync + rename). Records older than ``maxAge`` are pruned, at most once per process.
public struct ResultStore: Sendable {
    public static let maxAge: Double = 7 * 86_400

    public let directory: String
    public var resultsDirectory: String { StateDirectory(directory).results }

    public init(directory: String) {
        self.directory = directory
    }

    public func path(forID id: String) -> String { StateDirectory(directory).result(id) }

    /// Writes a record atomically (and durably unless `durably` is false), replacing an earlier one of the same id.
    public func save(_ record: TransferRecord, durably: Bool = true) throws {
        for dir in [directory, resultsDirectory] where mkdir(dir, 0o700) != 0 && errno != EEXIST {
            throw TokenStoreError.cannotWrite(dir, reason: String(cString: strerror(errno)))
        }
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

    public func remove(id: String) { unlink(path(forID: id)) }

    /// Every readable record, oldest first.
    public func all() -> [TransferRecord] {
        pruneOnce()
        let names = (try? FileManager.default.contentsOfDirectory(atPath: resultsDirectory)) ?? []
        return names.filter { $0.hasSuffix(".json") }
            .compactMap { load(id: String($0.dropLast(5))) }
            .sorted { $0.endedAt < $1.endedAt }
    }

    /// Removes records (and temp files a crash left) last written more than `maxAge` seconds before `now`:
    /// one readdir and one stat a file, by modification time.
    /// - Returns: the names removed.
    @discardableResult
    public func prune(now: Date = Date(), maxAge: Double = ResultStore.maxAge) -> [String] {
        guard let dir = opendir(resultsDirectory) else { return [] }
        defer { closedir(dir) }
        let limit = now.timeIntervalSince1970 - maxAge
        var removed: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
            guard name.hasSuffix(".json") || name.contains(".json.tmp.") else { continue }
            let file = resultsDirectory + "/" + name
            var st = stat()
            guard stat(file, &st) == 0, Double(st.st_mtim.tv_sec) < limit else { continue }
            if unlink(file) == 0 { removed.append(name) }
        }
        return removed
    }

    /// ``prune(now:maxAge:)`` the first time any store of this process asks for it.
    public func pruneOnce() {
        guard !Self.pruned.exchange(true, ordering: .relaxed) else { return }
        prune()
    }

    private static let pruned = Atomic<Bool>(false)

    /// The record as `show` prints it.
    public static func json(_ record: TransferRecord) -> String {
        String(decoding: (try? TokenStore.encoder.encode(record)) ?? Data(), as: UTF8.self)
    }
}

/// Keeps passwords out of what is written down: `scheme://user:password@host` loses the password.
public enum Redact {
    public static func url(_ url: String) -> String {
        let chars = Array(url)
        guard let colon = chars.firstIndex(of: ":"), colon + 2 < chars.count, chars[colon + 1] == "/", chars[colon + 2] == "/"
        else { return url }
        let hostStart = colon + 3
        var authorityEnd = hostStart
        while authorityEnd < chars.count, !"/?#".contains(chars[authorityEnd]) { authorityEnd += 1 }
        guard let at = chars[hostStart..<authorityEnd].lastIndex(of: "@") else { return url }
        let userinfo = chars[hostStart..<at]
        guard let split = userinfo.firstIndex(of: ":") else { return url }
        return String(chars[..<split]) + ":***" + String(chars[at...])
    }

    /// Every URL in a sentence, redacted.
    public static func text(_ text: String) -> String {
        guard text.contains("@") else { return text }
        return text.split(separator: " ", omittingEmptySubsequences: false).map { url(String($0)) }.joined(separator: " ")
    }
}
