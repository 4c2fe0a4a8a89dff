import FoundationEssentials
import Glibc

/// Tokens on disk: `<state>/tokens/<id>.json`, mode 0600 in a 0700 folder, each written by
/// temp file + fsync + rename + fsync of the folder, so a crash leaves the old or the new token whole.
public struct TokenStore: Sendable {
    public let directory: String

    /// The state folder's layout.
    public var state: StateDirectory { StateDirectory(directory) }
    public var tokensDirectory: String { state.tokens }

    public init(directory: String) {
        self.directory = directory
    }

    /// `$RESUMECTL_STATE_DIR`, else `$XDG_STATE_HOME/resumectl`, else `~/.local/state/resumectl`.
    public static func defaultDirectory() -> String { StateDirectory.located().path }

    /// ``defaultDirectory()`` as it would be under `environment`.
    public static func defaultDirectory(environment: [String: String]) -> String {
        StateDirectory.located { environment[$0] }.path
    }

    /// A stable id: the same URL to the same place gets the same token, so a second run resumes.
    public static func makeID(kind: ResumeToken.Kind, url: String, path: String) -> String {
        // Of the URL as a token keeps it: a password is in no file, not even hashed into a name.
        let digest = MessageDigest.hash(.sha256, Array(Redact.url(url).utf8) + [0] + Array(path.utf8))
        return (kind == .download ? "d-" : "u-") + digest.prefix(8).hex
    }

    public func path(forID id: String) -> String { state.token(id) }
    public func lockPath(forID id: String) -> String { state.lock(id) }

    /// Turns what the user typed (an id, or a token file's path) into a token file path.
    public func resolve(_ reference: String) -> String {
        if reference.contains("/") || reference.hasSuffix(".json") { return reference }
        return path(forID: reference)
    }

    /// Creates the state folder and its `tokens/` (mode 0700), parents included, like `mkdir -p`.
    public func ensureDirectory() throws {
        for dir in [directory, tokensDirectory] { try Self.makeFolder(dir) }
    }

    /// `mkdir -p` with mode 0700, failing with one sentence that names the folder and the system's reason.
    static func makeFolder(_ dir: String) throws {
        if let (folder, reason) = Paths.makeFolders(dir, mode: 0o700) {
            throw TokenStoreError.cannotCreateFolder(folder, reason: reason)
        }
    }

    public func exists(id: String) -> Bool { access(path(forID: id), F_OK) == 0 }

    /// ``save(_:)`` for a running transfer: a failure is local I/O (exit 74), naming the token to resume
    /// when `keeping` (the token on disk is still the last good one).
    func write(_ token: ResumeToken, keeping: Bool = false) throws(TransferError) {
        do { try save(token) } catch { throw TransferError(.localIO, "\(error)", tokenID: keeping ? token.id : nil) }
    }

    /// Reads a token, mapping store errors to the documented exit statuses (66 missing, 65 unreadable).
    func loadChecked(_ reference: String) throws(TransferError) -> ResumeToken {
        do {
            return try load(reference)
        } catch {
            if case .notFound? = error as? TokenStoreError { throw TransferError(.inputMissing, "\(error)") }
            throw TransferError(.badToken, "\(error)")
        }
    }

    /// Reads a token. A missing file, bad JSON or another schema version is an error, never a guess.
    public func load(_ reference: String) throws -> ResumeToken {
        let file = resolve(reference)
        guard let data = FileManager.default.contents(atPath: file) else {
            if access(file, F_OK) == 0 { throw TokenStoreError.unreadable(file, reason: "permission denied") }
            throw TokenStoreError.notFound(reference)
        }
        return try Self.decode(data, path: file)
    }

    static func decode(_ data: Data, path: String) throws -> ResumeToken {
        struct Versioned: Decodable { var version: Int }
        guard let versioned = try? decoder.decode(Versioned.self, from: data) else {
            throw TokenStoreError.unreadable(path, reason: "not a resumectl token (bad JSON)")
        }
        guard versioned.version == ResumeToken.currentVersion else {
            throw TokenStoreError.unsupportedVersion(path, versioned.version)
        }
        do {
            let token = try decoder.decode(ResumeToken.self, from: data)
            try TokenValidation.check(token)
            return token
        } catch let violation as TokenValidation.Violation {
            throw TokenStoreError.invalid(path, violation)
        } catch {
            throw TokenStoreError.unreadable(path, reason: "missing or malformed fields")
        }
    }

    /// Writes a token atomically and durably.
    public func save(_ token: ResumeToken) throws {
        var token = token
        token.updatedAt = Date()
        let data = try Self.encoder.encode(token)
        try ensureDirectory()
        try Self.writeDurably(data, to: path(forID: token.id), folder: tokensDirectory)
    }

    /// The write of the type's doc, with the file mode 0600. Without `sync` only a reader never sees a torn file
    /// (live information, a record no one relies on).
    static func writeDurably(_ data: Data, to final: String, folder: String, sync: Bool = true) throws {
        let temp = final + ".tmp.\(getpid())"
        let fd = open(temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw TokenStoreError.cannotWrite(final, reason: String(cString: strerror(errno))) }
        var ok = data.withUnsafeBytes { writeAll(fd, $0) }
        ok = ok && (!sync || fsync(fd) == 0)
        let err = errno
        close(fd)
        guard ok, rename(temp, final) == 0 else {
            let reason = String(cString: strerror(ok ? errno : err))
            unlink(temp)
            throw TokenStoreError.cannotWrite(final, reason: reason)
        }
        if sync { syncDirectory(folder) }
    }

    /// Removes a token and its lock file; `durably` syncs the folder. A finished download need not: its result
    /// record (synced first) answers for the id, and a token a power cut brings back only fetches it again.
    public func remove(id: String, durably: Bool = true) {
        let removedToken = unlink(path(forID: id)) == 0
        unlink(lockPath(forID: id))
        // A transfer that ended before its first checkpoint never wrote a token: nothing to make durable.
        if removedToken, durably { syncDirectory(tokensDirectory) }
    }

    /// The ids of the tokens there now, from one listing: for a check that many files make at once.
    func ids() -> Set<String> {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: tokensDirectory)) ?? []
        return Set(names.lazy.filter { $0.hasSuffix(".json") }.map { String($0.dropLast(5)) })
    }

    /// Every readable token, and the files that are not, for `list`.
    public func all() -> (tokens: [ResumeToken], broken: [(String, String)]) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: tokensDirectory)) ?? []
        var tokens: [ResumeToken] = []
        var broken: [(String, String)] = []
        for name in names.sorted() where name.hasSuffix(".json") {
            let file = tokensDirectory + "/" + name
            do { tokens.append(try load(file)) } catch { broken.append((file, "\(error)")) }
        }
        return (tokens, broken)
    }

    /// Removes temp files a crash left between write and rename; the token they were replacing is intact.
    public func removeLeftovers() -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: tokensDirectory)) ?? []
        var removed: [String] = []
        for name in names where name.contains(".json.tmp.") {
            let pidText = name.split(separator: ".").last.map(String.init) ?? ""
            if let pid = Int32(pidText), pid != getpid(), kill(pid, 0) == 0 { continue }  // a live writer
            unlink(tokensDirectory + "/" + name)
            removed.append(name)
        }
        return removed
    }

    static let encoder: JSONEncoder = {
        let e = JSONEncoder()
        e.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        e.dateEncodingStrategy = ISOTime.encoding
        return e
    }()

    static let decoder: JSONDecoder = {
        let d = JSONDecoder()
        d.dateDecodingStrategy = ISOTime.decoding
        return d
    }()

    /// A token (or a result or batch record) as the JSON `show` prints and the README documents.
    public static func json(_ value: some Encodable) -> String {
        String(decoding: (try? encoder.encode(value)) ?? Data(), as: UTF8.self)
    }
}

/// Writes all of `bytes` to `fd`, across short writes and signals; false on an error.
public func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
    var done = 0
    while done < bytes.count {
        let n = uninterrupted { write(fd, bytes.baseAddress! + done, bytes.count - done) }
        if n <= 0 { return false }
        done += n
    }
    return true
}

/// A system call retried while a signal interrupts it (`EINTR`).
public func uninterrupted(_ call: () -> Int) -> Int {
    while true {
        let n = call()
        if n >= 0 || errno != EINTR { return n }
    }
}

func syncDirectory(_ path: String) {
    let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    guard fd >= 0 else { return }
    fsync(fd)
    close(fd)
}
