import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Debian's tinyproxy, a real forward proxy (GET with absolute URLs, CONNECT for https), on 127.0.0.1 with
/// a generated config in a temp folder. Started in the foreground (`-d`) and stopped by PID.
public final class Tinyproxy: Sendable {
    public let port: Int
    public let dir: TempDirectory
    private let process: RunningProcess

    /// `http://127.0.0.1:PORT`, for `-x` or `http_proxy`/`https_proxy`.
    public var url: String { "http://127.0.0.1:\(port)" }

    public init() async throws {
        let dir = try TempDirectory(prefix: "resumectl-tinyproxy")
        guard
            let binary = ["/usr/bin/tinyproxy", "/usr/sbin/tinyproxy"].first(where: {
                FileManager.default.isExecutableFile(atPath: $0)
            })
        else {
            throw SupportError("tinyproxy is not installed: run `make deps`")
        }
        var lastError = ""
        for _ in 0..<6 {
            let port = try freePort()
            // No ConnectPort line: CONNECT is allowed to every port (the test servers use random ones).
            let config = """
                Port \(port)
                Listen 127.0.0.1
                Timeout 60
                MaxClients 64
                Allow 127.0.0.1
                LogFile "\(dir.path("tinyproxy.log"))"
                LogLevel Connect
                PidFile "\(dir.path("tinyproxy.pid"))"
                DisableViaHeader Yes

                """
            try config.write(toFile: dir.path("tinyproxy.conf"), atomically: true, encoding: .utf8)
            let process = try RunningProcess(binary, ["-d", "-c", dir.path("tinyproxy.conf")])
            let deadline = ContinuousClock.now + .seconds(10)
            while ContinuousClock.now < deadline, process.isRunning, !isAcceptingConnections(port: port) {
                try await Task.sleep(for: .milliseconds(10))
            }
            if process.isRunning, isAcceptingConnections(port: port) {
                self.port = port
                self.dir = dir
                self.process = process
                return
            }
            process.send(signal: SIGKILL)
            lastError =
                process.stderrSoFar + ((try? String(contentsOfFile: dir.path("tinyproxy.log"), encoding: .utf8)) ?? "")
        }
        throw SupportError("tinyproxy did not start: \(lastError)")
    }

    /// What tinyproxy logged: one `Request` or `CONNECT` line per proxied request.
    public func log() -> String {
        (try? String(contentsOfFile: dir.path("tinyproxy.log"), encoding: .utf8)) ?? ""
    }

    public func stop() {
        guard process.isRunning else { return }
        process.send(signal: SIGTERM)
        for _ in 0..<300 where process.isRunning { usleep(10_000) }
        process.send(signal: SIGKILL)
        for _ in 0..<100 where process.isRunning { usleep(10_000) }
    }

    deinit { stop() }
}
