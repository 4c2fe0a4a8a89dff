import Foundation
import Testing

/// `serve --store s3://` holds the bodies of its uploads against one budget (``BodyMemory``), as the
/// folder store does: before, each upload held up to four parts in flight, a part and 4 MiB more, in an
/// array twice that in capacity (420–460 MiB an instance in `make soak-serve` at a quarter of its load).
@Suite("serve S3 store: memory")
struct ServeS3MemoryTests {
    /// VmHWM of `pid`, in KiB.
    static func peakKiB(_ pid: Int32) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    @Test(
        """
        eight 40 MiB PUTs at once into one instance (5 MiB parts): its peak RSS stays within the 32 MiB budget and \
        about a part per upload; every object is its file
        """
    )
    func uploadsShareOneBudget() async throws {
        let cluster = try await S3ServeCluster(instances: 1, extra: ["--single-instance"])
        let w = try Workspace()
        let count = 8
        let size = 40 << 20
        var digests: [String: String] = [:]
        for i in 0..<count {
            digests[cluster.key("in/m\(i).bin")] = try makeRandomFile(
                path: w.path("www/m\(i).bin"), size: size, seed: UInt64(4760 + i))
        }
        let base = "http://127.0.0.1:\(cluster.ports[0])/in/"
        let pid = cluster.instances[0].pid
        let idle = Self.peakKiB(pid)
        let codes = try await withThrowingTaskGroup(of: String.self) { group in
            for i in 0..<count {
                group.addTask {
                    try await runProcess(
                        "curl",
                        [
                            "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-T", w.path("www/m\(i).bin"),
                            base + "m\(i).bin",
                        ],
                        timeout: .seconds(300)
                    ).stdout
                }
            }
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        let peak = Self.peakKiB(pid)
        #expect(codes == Array(repeating: "201", count: count), "\(codes) \(cluster.instances[0].stderrSoFar)")
        let stored = try await cluster.moto.digests(cluster.bucket).filter { $0.key.hasPrefix(cluster.key("in/")) }
        #expect(stored == digests)
        print(
            "serve S3 memory: VmHWM \(idle / 1024) MiB idle, \(peak / 1024) MiB after \(count) uploads of "
                + "\(size >> 20) MiB at once"
        )
        // The budget, a part and a read each beyond it, and room for libcurl's and NIO's buffers.
        let bound = idle + (32 << 10) + count * (6 << 10) + (24 << 10)
        #expect(
            peak > idle && peak <= bound, "peak \(peak / 1024) MiB, idle \(idle / 1024) MiB, bound \(bound / 1024) MiB")
    }
}
