import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// `resumectl serve --store s3://BUCKET/inbox/` instances sharing one moto, behind nginx round-robin
/// with no stickiness: what #34 promises works with no other service. Every instance is the built
/// binary on a port of its own (port 0); nginx and moto are real. A peer that cannot start throws.
final class S3ServeCluster: @unchecked Sendable {
    let moto: MotoServer
    let bucket: String
    let home: TempDirectory
    private(set) var instances: [RunningProcess] = []
    private(set) var ports: [Int] = []
    /// The instance ids, as each logged them at start (the holder id in its lock grants).
    private(set) var ids: [String] = []
    let nginx: NginxServer

    /// - Parameter extra: more `serve` arguments for every instance.
    init(instances count: Int, extra: [String] = []) async throws {
        moto = try await MotoServer()
        bucket = "serve-" + UUID().uuidString.prefix(8).lowercased()
        try await moto.createBucket(bucket)
        home = try TempDirectory(prefix: "resumectl-s3serve")
        for _ in 0..<count {
            let (process, port, id) = try await Self.serve(moto: moto, bucket: bucket, home: home.path, extra: extra)
            instances.append(process)
            ports.append(port)
            ids.append(id)
        }
        let servers = ports.map { "server 127.0.0.1:\($0) max_fails=0;" }.joined(separator: " ")
        nginx = try await NginxServer(
            root: home.path,
            serverDirectives: """
                client_max_body_size 0;
                location / {
                    proxy_pass http://serves;
                    proxy_http_version 1.1;
                    proxy_set_header Connection "";
                    proxy_set_header Host $http_host;
                    proxy_request_buffering off;
                    proxy_buffering off;
                    proxy_read_timeout 60s;
                }
                """,
            httpDirectives: "upstream serves { \(servers) keepalive 8; }")
    }

    /// One instance: `serve --store` with short locks (a killed instance's uploads wait 4 s) and 5 MiB parts.
    /// `endpoint`: where it reaches S3, if not moto itself (a proxy in front of it).
    static func serve(
        moto: MotoServer, bucket: String, home: String, extra: [String], port: Int = 0, endpoint: String? = nil
    ) async throws -> (RunningProcess, Int, String) {
        let process = try RunningProcess(
            resumectlBinary,
            [
                "serve", "--store", "s3://\(bucket)/inbox/", "--endpoint-url", endpoint ?? moto.endpoint, "--port",
                "\(port)",
                "--lock-seconds", "4", "--part-size", "5M",
            ] + extra,
            environment: moto.environment(home: home), inheritEnvironment: false)
        let port: Int
        do {
            port = try await ServeProcess.listening(process, timeout: .seconds(60)).port
        } catch {
            process.send(signal: SIGKILL)
            throw SupportError("serve --store did not start: \(error) \(process.stderrSoFar)")
        }
        let id =
            process.stderrSoFar.split(separator: "\n").first { $0.contains(", instance ") }
            .map { String($0.split(separator: " ").last ?? "") } ?? ""
        return (process, port, id)
    }

    /// Kills instance `index` with SIGKILL and starts a new one on its port (nothing carried over but S3).
    func restart(_ index: Int, extra: [String] = []) async throws {
        instances[index].send(signal: SIGKILL)
        _ = try await instances[index].wait(timeout: .seconds(10))
        let (process, _, id) = try await Self.serve(
            moto: moto, bucket: bucket, home: home.path, extra: extra, port: ports[index])
        instances[index] = process
        ids[index] = id
    }

    /// `http://127.0.0.1:PORT` of the balancer.
    var url: String { nginx.baseURL }

    /// Request lines instance `index` logged (`METHOD PATH STATUS …`).
    func requests(_ index: Int) -> [String] {
        instances[index].stderrSoFar.split(separator: "\n").map(String.init)
            .filter {
                ["GET ", "HEAD ", "PUT ", "POST ", "PATCH ", "DELETE ", "OPTIONS "].contains(where: $0.hasPrefix)
            }
    }

    /// Creates a tus upload of `length` bytes at `target` through instance `index` (curl, no body); its URL on
    /// every instance, in their order (the URL is the same resource on each: the upload lives on S3).
    func createTusUpload(through index: Int, _ target: String, length: Int) async throws -> [String] {
        let created = try await CurlExchange.run([
            "-X", "POST", "-H", "Tus-Resumable: 1.0.0", "-H", "Upload-Length: \(length)",
            "http://127.0.0.1:\(ports[index])" + target,
        ])
        guard let location = created["location"] else { throw SupportError("no Location: \(created.heads)") }
        let path =
            location.hasPrefix("http") ? String(location.drop { $0 != "/" }.dropFirst(2).drop { $0 != "/" }) : location
        return ports.map { "http://127.0.0.1:\($0)" + path }
    }

    /// The object key a served path names.
    func key(_ path: String) -> String { "inbox/" + path }

    deinit {
        for process in instances { process.send(signal: SIGKILL) }
    }
}
