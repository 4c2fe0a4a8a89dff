import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Debian's nginx serving a folder on 127.0.0.1, the reference server for ranged downloads.
///
/// Every path nginx writes (pid, logs, lock, temp folders) lives in a private prefix folder, and
/// `-e stderr` keeps it off the compiled-in `/var/log/nginx`, so it runs as root or not, in parallel with
/// other instances, without touching system paths. `master_process off` makes it one process: stopping it by
/// PID cannot orphan a worker that would keep the port, and files in a 0700 temp folder stay readable (no
/// switch to an unprivileged worker user).
///
/// The port is picked free and nginx retried on another one if the bind races with someone else.
public final class NginxServer: Sendable {
    public let port: Int
    /// The folder served at `/`.
    public let root: String
    /// Holds `nginx.conf`, `nginx.pid`, `error.log`, `access.log` and the temp folders.
    public let prefix: TempDirectory
    private let process: RunningProcess

    /// TLS settings when nginx serves https.
    public let tls: TLS?
    /// The address nginx listens on: `127.0.0.1`, or `::1` for IPv6.
    public let host: String

    /// `http://127.0.0.1:PORT`, `https://…` with TLS, `http://[::1]:PORT` on IPv6.
    public var baseURL: String {
        "\(tls == nil ? "http" : "https")://\(host.contains(":") ? "[\(host)]" : host):\(port)"
    }

    /// nginx's TLS: certificate and key files, optionally HTTP/2 and a required client certificate.
    public struct TLS: Sendable {
        public var certificate: String
        public var key: String
        public var http2: Bool
        /// CA file whose client certificates are required (`ssl_verify_client on`).
        public var clientCA: String?

        public init(certificate: String, key: String, http2: Bool = false, clientCA: String? = nil) {
            self.certificate = certificate
            self.key = key
            self.http2 = http2
            self.clientCA = clientCA
        }
    }

    /// The URL of `name` (a path relative to `root`, percent-encoded here).
    public func url(for name: String) -> String {
        let path = name.hasPrefix("/") ? String(name.dropFirst()) : name
        return "\(baseURL)/\(path.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? path)"
    }

    /// Starts nginx and returns once it accepts connections.
    /// - Parameters:
    ///   - root: the folder to serve.
    ///   - limitRate: nginx `limit_rate` in bytes per second per response (for slow transfers and benchmarks).
    ///   - serverDirectives: extra directives for the `server` block, e.g. `location = /old { return 302 /new; }`.
    ///   - httpDirectives: extra directives for the `http` block, e.g. an `upstream` to balance over.
    ///   - port: a fixed port (to start a server again where a stopped one was), else a free one.
    public init(
        root: String,
        limitRate: Int? = nil,
        serverDirectives: String = "",
        httpDirectives: String = "",
        port fixedPort: Int? = nil,
        tls: TLS? = nil,
        host: String = "127.0.0.1",
        // Generous: the parallel suite starts some 300 tests at once on 2 cores, and an nginx among them
        // was seen to need more than 15 s to answer; a healthy start still returns as soon as it answers.
        startTimeout: Duration = .seconds(45)
    ) async throws {
        let prefix = try TempDirectory(prefix: "resumectl-nginx")
        var lastError = ""
        for _ in 0..<6 {
            let port = try fixedPort ?? freePort()
            let config = Self.config(
                prefix: prefix.path, root: root, port: port, limitRate: limitRate,
                serverDirectives: serverDirectives, httpDirectives: httpDirectives, tls: tls, host: host)
            try config.write(toFile: prefix.path("nginx.conf"), atomically: true, encoding: .utf8)
            try? FileManager.default.removeItem(atPath: prefix.path("nginx.pid"))
            let process = try RunningProcess(
                nginxBinary, ["-p", prefix.path + "/", "-c", prefix.path("nginx.conf"), "-e", "stderr"])
            switch try await Self.waitUntilReady(process, port: port, host: host, prefix: prefix, timeout: startTimeout)
            {
            case .ready:
                self.port = port
                self.root = root
                self.prefix = prefix
                self.process = process
                self.tls = tls
                self.host = host
                return
            case .portTaken(let log):
                lastError = log
                continue
            }
        }
        throw SupportError("nginx could not bind a free port after 6 attempts: \(lastError)")
    }

    private enum Start { case ready, portTaken(String) }

    private static func waitUntilReady(
        _ process: RunningProcess, port: Int, host: String, prefix: TempDirectory, timeout: Duration
    ) async throws -> Start {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if !process.isRunning {
                let result = try await process.wait(timeout: .seconds(5))
                let log =
                    result.stderr + ((try? String(contentsOfFile: prefix.path("error.log"), encoding: .utf8)) ?? "")
                if log.contains("Address already in use") { return .portTaken(log) }
                throw SupportError("nginx exited during start-up (\(result.status)): \(log)")
            }
            // nginx writes its pid file only after it has bound the listening socket, so a connect that
            // succeeds now reaches this nginx and not someone who took the port.
            let pidFile = (try? String(contentsOfFile: prefix.path("nginx.pid"), encoding: .utf8)) ?? ""
            if pidFile.trimmingCharacters(in: .whitespacesAndNewlines) == String(process.pid),
                host != "127.0.0.1" || isAcceptingConnections(port: port)
            {  // the pid file alone for ::1
                return .ready
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        process.send(signal: SIGKILL)
        throw SupportError("nginx did not accept connections on port \(port) within \(timeout): \(process.stderrSoFar)")
    }

    static func config(
        prefix: String, root: String, port: Int, limitRate: Int?, serverDirectives: String,
        httpDirectives: String = "", tls: TLS? = nil, host: String = "127.0.0.1"
    ) -> String {
        let address = host.contains(":") ? "[\(host)]" : host
        var listen = "listen \(address):\(port)"
        var tlsDirectives = ""
        if let tls {
            listen += tls.http2 ? " ssl http2" : " ssl"
            tlsDirectives = "ssl_certificate \"\(tls.certificate)\"; ssl_certificate_key \"\(tls.key)\";"
            if let ca = tls.clientCA { tlsDirectives += " ssl_client_certificate \"\(ca)\"; ssl_verify_client on;" }
        }
        return """
            daemon off;
            master_process off;
            worker_processes 1;
            pid \(prefix)/nginx.pid;
            lock_file \(prefix)/nginx.lock;
            error_log \(prefix)/error.log info;
            events { worker_connections 256; }
            http {
                types { application/octet-stream bin; text/plain txt; text/html html; }
                default_type application/octet-stream;
                log_format e2e '$status $request_method $request_uri range="$http_range" if_range="$http_if_range" '
                               'accept_encoding="$http_accept_encoding" sent=$body_bytes_sent $server_protocol '
                               'user="$remote_user" ua="$http_user_agent" conn=$connection';
                access_log \(prefix)/access.log e2e;
                client_body_temp_path \(prefix)/client_body;
                proxy_temp_path \(prefix)/proxy;
                fastcgi_temp_path \(prefix)/fastcgi;
                uwsgi_temp_path \(prefix)/uwsgi;
                scgi_temp_path \(prefix)/scgi;
                sendfile on;
                tcp_nopush on;
                server_tokens off;
                keepalive_timeout 30;
                \(httpDirectives)
                server {
                    \(listen);
                    server_name localhost;
                    \(tlsDirectives)
                    root "\(root)";
                    \(limitRate.map { "limit_rate \($0);" } ?? "")
                    \(serverDirectives)
                }
            }

            """
    }

    /// Lines of the access log so far: `STATUS METHOD URI range="…" if_range="…" accept_encoding="…" sent=N`.
    public func accessLog() -> [String] {
        splitLines((try? String(contentsOfFile: prefix.path("access.log"), encoding: .utf8)) ?? "")
    }

    /// The error log so far (start-up problems, client aborts at `info` level).
    public func errorLog() -> String {
        (try? String(contentsOfFile: prefix.path("error.log"), encoding: .utf8)) ?? ""
    }

    public var isRunning: Bool { process.isRunning }

    /// Stops nginx by PID (SIGTERM, then SIGKILL after 3 s) and returns once it has exited.
    public func stop() {
        guard process.isRunning else { return }
        process.send(signal: SIGTERM)
        for _ in 0..<300 where process.isRunning { usleep(10_000) }
        process.send(signal: SIGKILL)
        for _ in 0..<100 where process.isRunning { usleep(10_000) }
    }

    deinit { stop() }
}
