import Foundation
import Testing

/// `resumectl serve` reached through something in between (a port forward, a reverse proxy): the
/// upload `Location`s follow the request, so every request of an upload takes the same road.
@Suite("serve behind a proxy")
struct ServeProxyTests {
    @Test("an IETF upload cut three times through a proxy: POST, HEAD and PATCH all pass the proxy")
    func ietfUploadThroughCuts() async throws {
        let w = try Workspace()
        let size = 3_000_000
        let digest = try makeRandomFile(path: w.path("www/src.bin"), size: size, seed: 1021)
        try await InProcessServe.with { served in
            let plan = Fault.randomCuts(seed: 2021, count: 6, direction: .upstream, bytes: 200_000...600_000)
                .map { $0.throttled(bytesPerSecond: 2_000_000) }
            let proxy = try FaultProxy(upstreamPort: served.port, plan: plan)
            let r = try await w.run([
                "upload", w.path("www/src.bin"), proxy.url(for: "in/p.bin"), "--json", "--retry-delay", "0.05",
            ])
            #expect(r.status == 0, "\(r)")
            #expect(try sha256(file: served.path("in/p.bin")) == digest)
            #expect(proxy.connections.filter(\.triggered).count >= 3, "\(proxy.connections)")

            let passed = proxy.connections.flatMap(\.requestLines).map { String($0.prefix { $0 != " " }) }
            for method in ["POST", "HEAD", "PATCH"] {
                #expect(passed.contains(method), "\(passed)")
            }
            // The server saw no request the proxy did not pass (a Location naming the server's own
            // address would send HEAD and PATCH around the proxy).
            let seen = served.log.compactMap { line -> String? in
                let method = String(line.prefix { $0 != " " })
                return ["POST", "HEAD", "PATCH"].contains(method) ? method : nil
            }
            for method in ["POST", "HEAD", "PATCH"] {
                let atServer = seen.filter { $0 == method }.count
                #expect(
                    atServer >= 1 && atServer <= passed.filter { $0 == method }.count,
                    "\(method): \(served.log) \(passed)")
            }
        }
    }
}
