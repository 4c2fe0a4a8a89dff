import Foundation

/// tuspyserver (PyPI, installed by `make deps`) under uvicorn on 127.0.0.1, started through
/// `scripts/tus_server.py`, which picks a free port, prints it, and exits when this test process dies.
/// Uploads are created at `endpoint` (`/files/`); each one's bytes land in `files/<id>`.
public final class TusServer: Sendable {
    public let port: Int
    public let files: TempDirectory
    private let process: RunningProcess

    public static let script: String = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("scripts/tus_server.py").path

    public var baseURL: String { "http://127.0.0.1:\(port)" }
    /// The creation endpoint.
    public var endpoint: String { baseURL + "/files/" }

    /// - Parameter expireSeconds: how long an upload lives on the server (tus expiration).
    /// - Parameter without: extensions left out of `Tus-Extension` (`concatenation`: a server without it).
    public init(expireSeconds: Double? = nil, maxSize: Int64? = nil, without: [String] = []) async throws {
        files = try TempDirectory(prefix: "resumectl-tus")
        var args = [Self.script, files.path]
        for name in without { args += ["--without", name] }
        if let expireSeconds { args += ["--expire-seconds", String(expireSeconds)] }
        if let maxSize { args += ["--max-size", String(maxSize)] }
        process = try RunningProcess("python3", args)
        let line: String
        do {
            // Generous, as for nginx: importing uvicorn and tuspyserver took over 30 s beside a full parallel suite.
            line = try await process.waitForLine(timeout: .seconds(90)) { $0.hasPrefix("PORT ") }
        } catch {
            process.send(signal: SIGKILL)
            throw SupportError("tuspyserver did not start (run `make deps`): \(error)")
        }
        guard let port = Int(line.dropFirst(5)) else {
            process.send(signal: SIGKILL)
            throw SupportError("tuspyserver printed no port: \(line)")
        }
        self.port = port
    }

    /// The server's copy of an upload, by its URL (the id is the last path component).
    public func storedPath(uploadURL: String) -> String {
        files.path(String(uploadURL.split(separator: "/").last ?? ""))
    }

    /// The data files (not the `.info` sidecars, nor the `.info.tmp` each one is written through) the server holds.
    public func storedUploads() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: files.path)) ?? []).filter {
            !$0.hasSuffix(".info") && !$0.hasSuffix(".info.tmp") && !$0.hasPrefix(".")
        }
    }

    deinit { process.send(signal: SIGKILL) }
}
