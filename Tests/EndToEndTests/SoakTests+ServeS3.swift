import Foundation
import Testing

extension SoakTests {
    /// #34 at its size: 256 MiB by `resumectl upload` (draft and tus) through three `serve --store s3://`
    /// instances behind nginx round-robin, cut five times by the fault proxy (the small version is in
    /// `ServeS3StoreTests`, which `make test` runs).
    @Test(arguments: ["ietf", "tus"])
    func serveS3ThroughThreeInstances(protocol name: String) async throws {
        let size = 256 << 20
        let cluster = try await S3ServeCluster(instances: 3)
        let w = try Workspace()
        let digest = try makeRandomFile(path: w.path("www/big.bin"), size: size, seed: name == "tus" ? 3411 : 3412)
        let plan = Fault.randomCuts(seed: 341, count: 5, direction: .upstream, bytes: (size / 12)...(size / 6))
        let proxy = try FaultProxy(upstreamPort: cluster.nginx.port, plan: plan)
        let target = name == "tus" ? proxy.url(for: "in/") : proxy.url(for: "in/big.bin")
        let r = try await w.run(
            [
                "upload", w.path("www/big.bin"), target, "--protocol", name, "-q",
                "--retries", "100", "--retry-delay", "0.1",
            ], timeout: .seconds(1800))
        let stored = try? await cluster.moto.sha256(cluster.bucket, cluster.key("in/big.bin"))
        let served = (0..<3).map { cluster.requests($0).count }
        Self.row(
            "serve s3 \(name), 3 instances", faults: proxy.connections.filter(\.triggered).count,
            finished: r.status == 0,
            resent: max(0, proxy.bytesUpstream - size), mismatch: r.status == 0 && stored != digest)
        #expect(r.status == 0 && stored == digest, "\(r)")
        #expect(served.allSatisfy { $0 > 0 }, "every instance served: \(served)")
    }
}
