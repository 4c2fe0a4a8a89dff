import Foundation
import Testing

/// `make soak`: one upload of RESUMECTL_SOAK_INTEROP_SIZE bytes (512 MiB) at each interop version of the
/// resumable-upload draft, to `serve` at 9 and to Apple's NIOResumableUpload at 3, 5 and 6, through a proxy that
/// cuts five connections mid-body, while the client is killed with SIGKILL twice and resumed: the stored file is
/// equal by SHA-256 and less than 1.1× the file went through the proxy.
extension SoakTests {
    static let interopSize = Int(env["RESUMECTL_SOAK_INTEROP_SIZE"] ?? "") ?? 512 << 20

    @Test(arguments: [("serve", 9), ("NIOResumableUpload", 3), ("NIOResumableUpload", 5), ("NIOResumableUpload", 6)])
    func interopUploadCutAndKilled(peer name: String, version: Int) async throws {
        let w = try Workspace()
        let size = Self.interopSize
        let digest = try makeRandomFile(path: w.path("www/f.bin"), size: size, seed: 300 + UInt64(version))
        // Every connection at 64 MB/s, so that the kills land mid-body; connections cut after a tenth of the file
        // each until five were cut (a HEAD or OPTIONS carries too little to be cut, whatever its place).
        let rate = 64_000_000
        let throttled = Array(repeating: Fault.throttle(bytesPerSecond: rate), count: 1_000)
        let plan = throttled.map { _ in Fault.cutAfterUpstream(bytes: size / 10).throttled(bytesPerSecond: rate) }
        let folder = try w.dir.subdirectory("served")
        var serve: RunningProcess?
        defer { serve?.send(signal: SIGKILL) }
        let proxy: FaultProxy
        let stored: () throws -> String
        if name == "serve" {
            let (process, port) = try await ServeProcess.start(folder: folder, port: 0)
            serve = process
            proxy = try FaultProxy(upstreamPort: port, plan: plan)
            stored = { try sha256(file: folder + "/in/f.bin") }
        } else {
            let peer = try await UploadPeer()
            proxy = try FaultProxy(upstreamPort: peer.port, plan: plan)
            peer.advertise(origin: proxy.baseURL)
            stored = { try peer.storedSHA256("f.bin") }
        }
        let target = proxy.url(for: name == "serve" ? "in/f.bin" : "f.bin")
        let retries = ["-q", "--retries", "inf", "--retry-delay", "0.05"]
        var p = try w.start(["upload", w.path("www/f.bin"), target, "--interop-version", "\(version)"] + retries)
        let fifthCut = proxy.switchPlan(afterCuts: 5, to: throttled)
        defer { fifthCut.cancel() }
        for fraction in [0.35, 0.7] {
            try await eventually(timeout: .seconds(600)) { proxy.bytesUpstream >= Int(Double(size) * fraction) }
            #expect(p.isRunning)
            p.send(signal: SIGKILL)
            _ = try await p.wait()
            let id = try #require(try w.tokens().first)
            p = try w.start(["resume", id] + retries)
        }
        let r = try await p.wait(timeout: .seconds(1800))
        let ok = r.status == 0 && (try? stored()) == digest
        let cuts = proxy.connections.filter(\.triggered).count
        Self.row(
            "interop \(version) to \(name == "serve" ? "serve" : "NIO")", faults: cuts + 2, finished: r.status == 0,
            resent: max(0, proxy.bytesUpstream - size), mismatch: r.status == 0 && !ok)
        #expect(ok, "\(r)")
        #expect(cuts >= 5, "\(proxy.connections)")
        #expect(Double(proxy.bytesUpstream) < 1.1 * Double(size), "\(proxy.bytesUpstream)")
    }
}
