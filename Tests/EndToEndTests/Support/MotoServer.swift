import Foundation

/// moto's S3 server (PyPI `moto[server]`, installed by `make deps`) on 127.0.0.1, started through
/// `scripts/moto_server.py`, which binds a free port, prints one JSON line with the port and the
/// credentials, and exits when this test process dies.
///
/// With `verify` (the default) every request must carry a valid SigV4 signature by the access key the
/// script created, over the request line as sent: a wrong secret gets `SignatureDoesNotMatch`. Without
/// it any request passes (for a test whose proxy drops a signed header).
///
/// The helpers (`createBucket`, `sha256`, `uploads`, `uploadPart`, …) run `scripts/s3_tool.py` (boto3)
/// against the same server. A server that cannot start throws: the test fails, it is never skipped.
public final class MotoServer: Sendable {
    public let port: Int
    public let accessKey: String
    public let secretKey: String
    public let verifies: Bool
    private let process: RunningProcess

    static let scripts: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("scripts")
    public static let script: String = scripts.appendingPathComponent("moto_server.py").path
    public static let tool: String = scripts.appendingPathComponent("s3_tool.py").path
    public static let region = "us-east-1"

    /// `http://127.0.0.1:PORT`, what `--endpoint-url` takes.
    public var endpoint: String { "http://127.0.0.1:\(port)" }

    public init(verify: Bool = true) async throws {
        var args = [Self.script]
        if !verify { args.append("--no-verify") }
        process = try RunningProcess("python3", args)
        let line: String
        do {
            line = try await process.waitForLine(timeout: .seconds(60)) { $0.hasPrefix("{") }
        } catch {
            process.send(signal: SIGKILL)
            throw SupportError("moto did not start (run `make deps` for moto[server]): \(error)")
        }
        guard let info = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
            let port = info["port"] as? Int, let accessKey = info["accessKey"] as? String,
            let secretKey = info["secretKey"] as? String
        else {
            process.send(signal: SIGKILL)
            throw SupportError("moto_server.py printed no port and key: \(line)")
        }
        self.port = port
        self.accessKey = accessKey
        self.secretKey = secretKey
        self.verifies = verify
    }

    /// What `resumectl` runs with: only PATH and locale from the runner (so no AWS_* or proxy variable of
    /// the machine leaks in), HOME and the AWS CLI's config and credentials files inside `home` (which
    /// need not exist), the region, and the server's credentials unless `credentials` is false.
    public func environment(home: String, credentials: Bool = true, secret: String? = nil) -> [String: String] {
        var env = Self.baseEnvironment(home: home)
        env["AWS_REGION"] = Self.region
        if credentials {
            env["AWS_ACCESS_KEY_ID"] = accessKey
            env["AWS_SECRET_ACCESS_KEY"] = secret ?? secretKey
        }
        return env
    }

    /// PATH, locale, HOME = `home` and AWS_CONFIG_FILE / AWS_SHARED_CREDENTIALS_FILE in `home/.aws`.
    public static func baseEnvironment(home: String) -> [String: String] {
        let runner = ProcessInfo.processInfo.environment
        var env: [String: String] = [
            "HOME": home, "AWS_CONFIG_FILE": home + "/.aws/config",
            "AWS_SHARED_CREDENTIALS_FILE": home + "/.aws/credentials",
        ]
        for name in ["PATH", "LANG", "LC_ALL", "TMPDIR"] {
            if let value = runner[name] { env[name] = value }
        }
        return env
    }

    // MARK: boto3 helpers (scripts/s3_tool.py)

    /// Runs one s3_tool.py command and returns its JSON result; throws with the S3 error on failure.
    @discardableResult
    public func tool(_ command: String, _ args: [String], timeout: Duration = .seconds(120)) async throws -> Any? {
        let r = try await runProcess(
            "python3",
            [Self.tool, "--endpoint", endpoint, "--access-key", accessKey, "--secret-key", secretKey, command] + args,
            timeout: timeout)
        guard r.status == 0 && !r.signaled else {
            throw SupportError("s3_tool.py \(command) \(args.joined(separator: " ")): \(r)")
        }
        return try JSONSerialization.jsonObject(with: Data(r.stdout.utf8), options: [.fragmentsAllowed])
    }

    /// The S3 error code (`NoSuchKey`, `NoSuchUpload`…) of a failing s3_tool.py command, nil if it succeeds.
    public func toolError(_ command: String, _ args: [String]) async throws -> String? {
        let r = try await runProcess(
            "python3",
            [Self.tool, "--endpoint", endpoint, "--access-key", accessKey, "--secret-key", secretKey, command] + args)
        if r.status == 0 { return nil }
        guard r.status == 3, let line = r.stderr.split(separator: "\n").first(where: { $0.hasPrefix("S3ERROR ") })
        else {
            throw SupportError("s3_tool.py \(command): \(r)")
        }
        return String(line.dropFirst(8).prefix { $0 != ":" })
    }

    public func createBucket(_ bucket: String) async throws {
        try await tool("create-bucket", [bucket])
    }

    /// Puts (or overwrites) `key` with the bytes of `file`; returns the object's ETag (quoted).
    @discardableResult
    public func put(_ bucket: String, _ key: String, file: String) async throws -> String {
        let r = try await tool("put", [bucket, key, file]) as? [String: Any]
        return try (r?["etag"] as? String).orThrow("put: no etag")
    }

    /// Puts `count` objects of `size` random bytes under `prefix` (every fifth one in `prefix + "sub/"`);
    /// returns key → SHA-256.
    public func putMany(_ bucket: String, prefix: String, count: Int, size: Int) async throws -> [String: String] {
        try (try await tool("put-many", [bucket, prefix, String(count), String(size)]) as? [String: String])
            .orThrow("put-many: no map")
    }

    /// Puts `size` random bytes at `key`; returns their SHA-256.
    @discardableResult
    public func putRandom(_ bucket: String, _ key: String, size: Int) async throws -> String {
        let r = try await tool("put-random", [bucket, key, String(size)]) as? [String: Any]
        return try (r?["sha256"] as? String).orThrow("put-random: no sha256")
    }

    /// SHA-256 (hex) of the object as boto3 reads it back.
    public func sha256(_ bucket: String, _ key: String) async throws -> String {
        try (try await tool("sha256", [bucket, key]) as? String).orThrow("sha256: no digest")
    }

    /// Every object of the bucket → the SHA-256 (hex) of its bytes, in one run of the tool.
    public func digests(_ bucket: String) async throws -> [String: String] {
        try (try await tool("digests", [bucket]) as? [String: String]).orThrow("digests: no map")
    }

    /// The object's ETag (quoted, `"<md5>-N"` for a multipart upload) and size.
    public func head(_ bucket: String, _ key: String) async throws -> (etag: String, size: Int) {
        let r = try await tool("head", [bucket, key]) as? [String: Any]
        return (try (r?["etag"] as? String).orThrow("head: no etag"), try (r?["size"] as? Int).orThrow("head: no size"))
    }

    /// Every key of the bucket (ListObjectsV2 without a prefix: works with verification on).
    public func keys(_ bucket: String) async throws -> [String] {
        try (try await tool("keys", [bucket]) as? [String]).orThrow("keys: no list")
    }

    /// The bucket's multipart uploads in progress (ListMultipartUploads): (key, uploadId).
    public func uploads(_ bucket: String) async throws -> [(key: String, uploadId: String)] {
        let list = try (try await tool("uploads", [bucket]) as? [[String: Any]]).orThrow("uploads: no list")
        return list.map { ($0["key"] as? String ?? "", $0["uploadId"] as? String ?? "") }
    }

    /// The parts the server holds for an upload (ListParts, every page).
    public func parts(_ bucket: String, _ key: String, uploadId: String) async throws -> [(
        number: Int, size: Int, etag: String
    )] {
        let list = try (try await tool("parts", [bucket, key, uploadId]) as? [[String: Any]]).orThrow("parts: no list")
        return list.map { ($0["number"] as? Int ?? 0, $0["size"] as? Int ?? 0, $0["etag"] as? String ?? "") }
    }

    /// Uploads `size` seeded random bytes as part `number` of an upload (replacing what was there); returns the ETag.
    @discardableResult
    public func uploadPart(_ bucket: String, _ key: String, uploadId: String, number: Int, size: Int, seed: Int = 7)
        async throws -> String
    {
        let r =
            try await tool("upload-part", [bucket, key, uploadId, String(number), String(size), String(seed)])
            as? [String: Any]
        return try (r?["etag"] as? String).orThrow("upload-part: no etag")
    }

    /// The object's CRC32C as `HeadObject` with `x-amz-checksum-mode: ENABLED` reports it, nil when none.
    public func checksum(_ bucket: String, _ key: String) async throws -> String? {
        (try await tool("checksum", [bucket, key]) as? [String: Any])?["crc32c"] as? String
    }

    public func abort(_ bucket: String, _ key: String, uploadId: String) async throws {
        try await tool("abort", [bucket, key, uploadId])
    }

    public func delete(_ bucket: String, _ key: String) async throws {
        try await tool("delete", [bucket, key])
    }

    deinit { process.send(signal: SIGKILL) }
}
