import Foundation
import Testing
@testable import ResumeKit

@Suite struct TokenStoreTests {
    let dir = scratchPath("rk-tokens")

    var store: TokenStore { TokenStore(directory: dir) }

    static func sample() -> ResumeToken {
        ResumeToken(
            id: "d-0123456789abcdef", url: "https://example.com/big.iso", headers: ["X-Trace: 1"],
            transfer: .download(
                .init(
                    path: "/data/big.iso", effectiveURL: "https://cdn.example.com/big.iso", etag: "\"abc\"",
                    lastModified: "Sun, 22 Nov 2026 01:00:00 GMT", validator: "\"abc\"", totalBytes: 1_073_741_824,
                    committedBytes: 16_777_216, expectedSHA256: nil, onChange: "restart")),
            now: Date(timeIntervalSince1970: 1_800_000_000))
    }

    @Test func goldenFileLocksTheSchema() throws {
        let url = try #require(Bundle.module.url(forResource: "Fixtures/token-v1", withExtension: "json"))
        let golden = try Data(contentsOf: url)
        let decoded = try TokenStore.decode(golden, path: url.path)
        #expect(decoded == Self.sample())
        #expect(TokenStore.json(Self.sample()) + "\n" == String(decoding: golden, as: UTF8.self))
    }

    /// An upload token written before upload protocols were named still loads, as an IETF upload, and
    /// writing it back adds only the protocol's name.
    @Test func uploadTokenFromBeforeProtocolsLoads() throws {
        let url = try #require(
            Bundle.module.url(forResource: "Fixtures/upload-token-v1-pre-protocol", withExtension: "json"))
        let golden = try Data(contentsOf: url)
        let token = try TokenStore.decode(golden, path: url.path)
        let upload = try #require(token.upload)
        #expect(upload.wire == .ietf(.v6))
        #expect(upload.uploadURL == "http://127.0.0.1:8080/resumable_upload/1-2")
        #expect(upload.acknowledgedBytes == 2_097_152)
        let written = String(decoding: golden, as: UTF8.self).replacingOccurrences(
            of: "    \"interopVersion\" : 6,\n", with: "    \"interopVersion\" : 6,\n    \"protocol\" : \"ietf\",\n")
        #expect(TokenStore.json(token) + "\n" == written)
    }

    /// A token written by `--detach` before the server was asked names no protocol and no version: it stays
    /// undecided, and is written back as it was.
    @Test func undecidedUploadRoundTrips() throws {
        let token = ResumeToken(
            id: "u-1", url: "http://h/files/", headers: [],
            transfer: .upload(
                .init(source: .init(path: "/a", size: 1, mtime: 0, inode: 1, edgeHash: "00"), wire: .undecided)),
            now: Date(timeIntervalSince1970: 1_800_000_000))
        let json = TokenStore.json(token)
        #expect(!json.contains("protocol") && !json.contains("interopVersion"))
        #expect(try TokenStore.decode(Data(json.utf8), path: "x").upload?.wire == .undecided)
    }

    @Test func tusFieldsAreOptionalAndRoundTrip() throws {
        let token = ResumeToken(
            id: "u-1", url: "http://h/files/", headers: [],
            transfer: .upload(
                .init(
                    uploadURL: "http://h/files/abc",
                    source: .init(path: "/a", size: 1, mtime: 0, inode: 1, edgeHash: "00"),
                    wire: .tus(expires: "Fri, 27 Nov 2026 23:30:22 GMT", checksum: .sha256))),
            now: Date(timeIntervalSince1970: 1_800_000_000))
        let json = TokenStore.json(token)
        #expect(json.contains("\"protocol\" : \"tus\""))
        #expect(!json.contains("interopVersion"))
        #expect(try TokenStore.decode(Data(json.utf8), path: "x") == token)
    }

    @Test func saveAndLoadRoundTripWithPrivateModes() throws {
        try store.save(Self.sample())
        #expect(try store.load("d-0123456789abcdef").download?.committedBytes == 16_777_216)
        let attrs = try FileManager.default.attributesOfItem(atPath: store.path(forID: "d-0123456789abcdef"))
        #expect((attrs[.posixPermissions] as? Int) == 0o600)
        let dirAttrs = try FileManager.default.attributesOfItem(atPath: store.tokensDirectory)
        #expect((dirAttrs[.posixPermissions] as? Int) == 0o700)
        try? FileManager.default.removeItem(atPath: dir)
    }

    @Test func credentialsNeverReachTheFile() throws {
        var t = Self.sample()
        t.url = "https://alice:pa%3Ass@example.com/a.iso"
        t.headers = [
            "Authorization: Bearer secret", "cookie: a=b", "Proxy-Authorization: x", "X-Keep: 1", "X-Api-Key: k1",
            "x-session-id: s1", "X-Auth-Token: t1", "X-Client-Secret: c1", "X-Password: p1",
        ]
        var part = try #require(t.download)
        part.effectiveURL = "https://alice:pa%3Ass@cdn.example.com/a.iso"
        t = t.with(.download(part))
        try store.save(t)
        let text = try String(contentsOfFile: store.path(forID: t.id), encoding: .utf8)
        for secret in ["secret", "a=b", "k1", "s1", "t1", "c1", "p1", "pa%3Ass"] {
            #expect(!text.contains(secret), "\(secret): \(text)")
        }
        let loaded = try store.load(t.id)
        #expect(loaded.headers == ["X-Keep: 1"])
        #expect(
            loaded.withheldHeaders == [
                "Authorization", "cookie", "Proxy-Authorization", "X-Api-Key", "x-session-id", "X-Auth-Token",
                "X-Client-Secret", "X-Password",
            ])
        #expect(
            loaded.url == "https://alice@example.com/a.iso"
                && loaded.download?.effectiveURL == "https://alice@cdn.example.com/a.iso")
        // Saved again (a checkpoint of a resume that gave the key back): each name once, the value still not.
        var again = loaded
        again.headers.append("X-API-KEY: k1")
        try store.save(again)
        #expect(try store.load(t.id).withheldHeaders == loaded.withheldHeaders)
        #expect(
            loaded.missingHeaders(given: ["x-api-key: k2", "Cookie: a=c"], login: true) == [
                "Proxy-Authorization", "x-session-id",
                "X-Auth-Token", "X-Client-Secret", "X-Password",
            ])
        try? FileManager.default.removeItem(atPath: dir)
    }

    @Test func redactKeepsTheUserAndHarmlessHeaders() {
        #expect(Redact.url("http://bob:pw@example.com:8080/x?y=1") == "http://bob@example.com:8080/x?y=1")
        #expect(Redact.login(in: "http://b%40b:p%3Aw@h/x")! == ("http://b%40b@h/x", "b@b", "p:w"))
        #expect(Redact.login(in: "http://h/a@b") == nil)
        for harmless in ["X-Trace", "Accept", "Range", "If-Match", "User-Agent", "Keep-Alive", "Content-Type"] {
            #expect(!Redact.isSecretHeader(harmless), "\(harmless)")
        }
        for secret in [
            "Authorization", "PROXY-AUTHORIZATION", "Cookie", "X-Api-Key", "X-Amz-Security-Token", "X-Session",
            "Password",
        ] {
            #expect(Redact.isSecretHeader(secret), "\(secret)")
        }
    }

    @Test(arguments: [
        ("zeros", Data(repeating: 0, count: 512)),
        ("truncated", Data("{\"version\": 1, \"id\": \"d-1\", \"ki".utf8)),
        ("newer", Data("{\"version\": 2, \"id\": \"d-1\"}".utf8)),
        ("fields", Data("{\"version\": 1, \"id\": \"d-1\"}".utf8)),
    ])
    func brokenTokensAreErrorsNotGuesses(name: String, data: Data) throws {
        try store.ensureDirectory()
        let path = store.tokensDirectory + "/\(name).json"
        #expect(FileManager.default.createFile(atPath: path, contents: data))
        #expect(throws: TokenStoreError.self) { try store.load(path) }
        #expect(FileManager.default.contents(atPath: path) == data)  // left as it was
        try? FileManager.default.removeItem(atPath: dir)
    }

    @Test func missingTokenIsNotFound() {
        #expect(throws: TokenStoreError.notFound("d-nothing")) { try store.load("d-nothing") }
    }

    @Test func leftoverTempFilesAreRemovedAndTheTokenSurvives() throws {
        try store.save(Self.sample())
        let leftover = store.path(forID: "d-0123456789abcdef") + ".tmp.999999"
        #expect(FileManager.default.createFile(atPath: leftover, contents: Data("{\"ver".utf8)))
        #expect(store.removeLeftovers() == ["d-0123456789abcdef.json.tmp.999999"])
        #expect(try store.load("d-0123456789abcdef") == store.load("d-0123456789abcdef"))
        try? FileManager.default.removeItem(atPath: dir)
    }

    @Test func idsAreStableAndKindPrefixed() {
        let a = TokenStore.makeID(kind: .download, url: "http://h/f", path: "/tmp/f")
        #expect(a == TokenStore.makeID(kind: .download, url: "http://h/f", path: "/tmp/f"))
        #expect(a.hasPrefix("d-") && a.count == 18)
        // The first 8 bytes of SHA-256(url NUL path): ids of tokens already on disk must stay valid.
        #expect(TokenStore.makeID(kind: .download, url: "http://h/x", path: "/tmp/x") == "d-bed3dc38112ea208")
        #expect(a != TokenStore.makeID(kind: .download, url: "http://h/f", path: "/tmp/g"))
        #expect(TokenStore.makeID(kind: .upload, url: "http://h/f", path: "/tmp/f").hasPrefix("u-"))
    }

    @Test func stateDirectoryFollowsTheEnvironment() {
        #expect(
            TokenStore.defaultDirectory(environment: ["RESUMECTL_STATE_DIR": "/s", "XDG_STATE_HOME": "/x"]) == "/s")
        #expect(TokenStore.defaultDirectory(environment: ["XDG_STATE_HOME": "/x", "HOME": "/h"]) == "/x/resumectl")
        #expect(TokenStore.defaultDirectory(environment: ["HOME": "/h"]) == "/h/.local/state/resumectl")
    }

    @Test func lockIsExclusiveAndNamesItsHolder() throws {
        try store.ensureDirectory()
        let path = store.lockPath(forID: "d-lock")
        let lock = try TokenLock(path: path)
        #expect(TokenLock.holder(path: path) == getpid())
        #expect(throws: TokenLock.Failure.held(pid: getpid())) { try TokenLock(path: path) }
        lock.release()
        #expect(TokenLock.holder(path: path) == nil)
        _ = try TokenLock(path: path)
        try? FileManager.default.removeItem(atPath: dir)
    }

    /// A holder that removes the file as it lets go leaves nobody holding a lock on a file no longer there.
    @Test func lockTakenFromARemovedFileMovesToTheNewOne() throws {
        try store.ensureDirectory()
        let path = store.lockPath(forID: "d-gone")
        let first = try TokenLock(path: path)
        let opened = open(path, O_RDWR)  // another process opened the file before the holder removed it
        defer { close(opened) }
        first.release(removingFile: true)
        #expect(access(path, F_OK) != 0)
        #expect(flock(opened, LOCK_EX | LOCK_NB) == 0)  // a lock on the removed file: excludes nobody
        let second = try TokenLock(path: path)
        #expect(TokenLock.holder(path: path) == getpid())
        #expect(throws: TokenLock.Failure.held(pid: getpid())) { try TokenLock(path: path) }
        second.release(removingFile: true)
        try? FileManager.default.removeItem(atPath: dir)
    }

    @Test func flockHolderNamesTheProcessHoldingAFile() throws {
        try store.ensureDirectory()
        let path = dir + "/x.part"
        let fd = open(path, O_RDWR | O_CREAT, 0o600)
        defer { close(fd) }
        let other = open(path, O_RDWR)
        defer { close(other) }
        #expect(TokenLock.flockHolder(of: other) == nil)
        #expect(flock(fd, LOCK_EX | LOCK_NB) == 0)
        #expect(TokenLock.flockHolder(of: other) == getpid())
        try? FileManager.default.removeItem(atPath: dir)
    }
}
