import Foundation
import Testing

/// The README's fault table, end to end: every path of a transfer against a real peer behind a
/// `FaultProxy`, meeting the same five troubles, ends as the table says. The troubles fire on byte counts
/// (or at the first requests), never on a timer, so the suites run beside the parallel ones; the cases of
/// each suite go one at a time, so that fifty peers at once do not starve the suites beside them. Four
/// suites (downloads and uploads, each with the troubles split in two) keep the longest of them short.
@Suite(.serialized) struct FaultMatrixDownloadTests {
    @Test(arguments: FaultMatrixTests.Route.allCases.filter { !$0.isUpload }, FaultMatrixTests.Trouble.firstHalf)
    func endsAsTheTableSays(_ route: FaultMatrixTests.Route, _ trouble: FaultMatrixTests.Trouble) async throws {
        try await FaultMatrixTests.check(route, trouble)
    }
}

@Suite(.serialized) struct FaultMatrixDownloadRetryTests {
    @Test(arguments: FaultMatrixTests.Route.allCases.filter { !$0.isUpload }, FaultMatrixTests.Trouble.secondHalf)
    func endsAsTheTableSays(_ route: FaultMatrixTests.Route, _ trouble: FaultMatrixTests.Trouble) async throws {
        try await FaultMatrixTests.check(route, trouble)
    }
}

@Suite(.serialized) struct FaultMatrixUploadTests {
    @Test(arguments: FaultMatrixTests.Route.allCases.filter(\.isUpload), FaultMatrixTests.Trouble.firstHalf)
    func endsAsTheTableSays(_ route: FaultMatrixTests.Route, _ trouble: FaultMatrixTests.Trouble) async throws {
        try await FaultMatrixTests.check(route, trouble)
    }
}

@Suite(.serialized) struct FaultMatrixUploadRetryTests {
    @Test(arguments: FaultMatrixTests.Route.allCases.filter(\.isUpload), FaultMatrixTests.Trouble.secondHalf)
    func endsAsTheTableSays(_ route: FaultMatrixTests.Route, _ trouble: FaultMatrixTests.Trouble) async throws {
        try await FaultMatrixTests.check(route, trouble)
    }
}

enum FaultMatrixTests {
    enum Route: String, CaseIterable, CustomTestStringConvertible {
        case download, segmented, stdout, list, s3Download, ietf, tus, plain, s3Upload, stdin
        var testDescription: String { rawValue }
        var isUpload: Bool { [.ietf, .tus, .plain, .s3Upload, .stdin].contains(self) }
        var isS3: Bool { self == .s3Download || self == .s3Upload }
    }

    enum Trouble: String, CaseIterable, CustomTestStringConvertible {
        /// Every connection reset and new ones refused for 4 s, once 512 KiB of the body passed.
        case goneFor4Seconds
        /// `503` with `Retry-After: 1` to the first two requests.
        case busyTwice
        /// The connection carrying the body stops moving for 5 s after 512 KiB (`--stall-timeout 2`).
        case stalled
        /// A host name that does not resolve, on a fresh transfer.
        case unresolved
        /// Nothing listens on the port, with `--retries 2`.
        case refused
        var testDescription: String { rawValue }
        /// The slowest trouble with the quick ones, and the two that wait on the server's clock.
        static let firstHalf: [Trouble] = [.goneFor4Seconds, .unresolved, .refused]
        static let secondHalf: [Trouble] = [.busyTwice, .stalled]
    }

    static let size = 4_000_000
    static let s3Size = 6 * 1_048_576

    static func check(_ route: Route, _ trouble: Trouble) async throws {
        let scene = try await Scene(route)
        switch trouble {
        case .unresolved:
            let r = try await scene.run(base: "http://no-such-host.invalid:8080", extra: [])
            #expect(r.status == 1, "\(route): \(r)")
            #expect(r.stderr.contains("no-such-host.invalid"), "\(route): the line names the host: \(r.stderr)")
            // A list adds its summary ("1 of 1 downloads failed") after the file's own line.
            let lines = r.stderr.split(separator: "\n").filter { !$0.isEmpty }
            #expect(lines.count == (route == .list ? 2 : 1), "\(route): one line: \(r.stderr)")
        case .refused:
            let r = try await scene.run(
                base: "http://127.0.0.1:\(try freePort())", extra: ["--retries", "2", "--retry-delay", "0.1"])
            #expect(r.status == 75, "\(route): \(r)")
        case .goneFor4Seconds, .busyTwice, .stalled:
            let direction: Fault.Direction = route.isUpload ? .upstream : .downstream
            var fault: Fault =
                switch trouble {
                case .goneFor4Seconds: Fault.goneAfter(direction, bytes: 512 << 10, for: .seconds(4)).firingOnce()
                // Finite: tuspyserver answers no HEAD while a PATCH of the upload hangs.
                default: Fault(trigger: (direction, 512 << 10, .stall(.seconds(5)))).firingOnce()
                }
            // The draft's creation is cut only once its 104 reached the client: before, the upload has no URL and
            // is rightly sent again whole, and under load 512 KiB can pass before NIOResumableUpload answers.
            if route == .ietf || route == .stdin { fault = fault.afterInterimResponse() }
            var plan: [Fault] =
                trouble == .busyTwice
                ? [.busy(retryAfter: 1), .busy(retryAfter: 1)] : Array(repeating: fault, count: 64)
            // A list asks for its file in the small-file pass first and drops the answer after its head (4 MB is
            // not small): that connection passes; the fault meets the worker's download.
            if route == .list, trouble != .busyTwice { plan.insert(.pass, at: 0) }
            let proxy = try FaultProxy(upstreamPort: scene.upstreamPort, plan: plan)
            defer { proxy.stop() }
            scene.advertise(proxy.baseURL)
            let started = ContinuousClock.now
            let r = try await scene.run(
                base: proxy.baseURL, extra: trouble == .stalled ? ["--stall-timeout", "2"] : [])
            #expect(r.status == 0, "\(route) \(trouble): \(r)")
            #expect(try await scene.delivered() == scene.digest, "\(route) \(trouble): bytes differ")
            let fired = proxy.connections.contains { $0.triggered }
            let seen = proxy.connections.map { "\($0.refused ? "refused" : "\($0.requestLines)")" }.joined(
                separator: " ")
            switch trouble {
            case .goneFor4Seconds:
                #expect(fired, "\(route): the server never went away")
                #expect(ContinuousClock.now - started >= .seconds(4), "\(route): finished while the server was gone")
                #expect(
                    proxy.connections.contains { $0.refused },
                    "\(route): nothing knocked while the server was gone: \(seen) \(r.stderr)")
            case .stalled:
                #expect(fired, "\(route): nothing stalled")
            default:
                #expect(ContinuousClock.now - started >= .seconds(2), "\(route): a Retry-After was not waited")
                #expect(proxy.connectionCount >= 3, "\(route): \(proxy.connectionCount) connections")
            }
            if route == .ietf || route == .tus || route == .stdin, trouble != .busyTwice {
                // The resume went through the proxy too: its HEAD (offset) and PATCH (the rest) were seen there.
                let lines = proxy.connections.flatMap(\.requestLines)
                #expect(
                    lines.contains { $0.hasPrefix("HEAD ") } && lines.contains { $0.hasPrefix("PATCH ") },
                    "\(route): the resume went around the proxy: \(seen) \(r.stderr)")
            }
        }
    }

    /// One route's peer, source and command.
    final class Scene: StreamPipelines {
        let route: Route
        let w: Workspace
        let digest: String
        let upstreamPort: Int
        private let nginx: NginxServer?
        private let peer: UploadPeer?
        private let tus: TusServer?
        private let s3: S3Scene?

        init(_ route: Route) async throws {
            self.route = route
            var nginx: NginxServer?
            var peer: UploadPeer?
            var tus: TusServer?
            var s3: S3Scene?
            var port = 0
            if route.isS3 {
                let scene = try await S3Scene()
                w = scene.w
                s3 = scene
                port = scene.moto.port
            } else {
                w = try Workspace()
            }
            let size = route.isS3 ? FaultMatrixTests.s3Size : FaultMatrixTests.size
            digest = try makeRandomFile(
                path: w.path("www/f.bin"), size: size, seed: UInt64(7 + Route.allCases.firstIndex(of: route)!))
            switch route {
            case .download, .segmented, .stdout, .list:
                nginx = try await NginxServer(root: w.path("www"))
                port = nginx!.port
            case .ietf, .stdin:
                peer = try await UploadPeer()
                port = peer!.port
            case .plain:
                peer = try await UploadPeer(plainMode: true)
                port = peer!.port
            case .tus:
                tus = try await TusServer()
                port = tus!.port
            case .s3Download:
                _ = try await s3!.moto.put(s3!.bucket, "f.bin", file: w.path("www/f.bin"))
            case .s3Upload:
                break
            }
            upstreamPort = port
            self.nginx = nginx
            self.peer = peer
            self.tus = tus
            self.s3 = s3
        }

        /// Upload servers name the proxy in their `Location`s, so that HEAD and PATCH pass it as well.
        func advertise(_ origin: String) {
            peer?.advertise(origin: origin)
        }

        /// Runs the route's command against `base` (scheme, host and port), to its end.
        func run(base: String, extra: [String]) async throws -> ProcessResult {
            let src = w.path("www/f.bin")
            switch route {
            case .download: return try await w.run(["download", base + "/f.bin", "-o", "f.bin"] + extra)
            case .segmented:
                return try await w.run(["download", base + "/f.bin", "-o", "f.bin", "--connections", "4"] + extra)
            case .stdout:
                return try await piped(["download", base + "/f.bin", "-o", "-"] + extra, into: "cat > f.bin")
            case .list:
                try (base + "/f.bin\n").write(toFile: w.path("list.txt"), atomically: true, encoding: .utf8)
                return try await w.run(["download", "-i", w.path("list.txt"), "-o", w.path("fetched")] + extra)
            case .s3Download:
                return try await s3!.run(["download", s3!.url("f.bin"), "-o", "f.bin", "--endpoint-url", base] + extra)
            // Interop 6 from the start: a first request at 8, refused by NIOResumableUpload, would take the
            // fault before the upload exists, and the resume (HEAD, PATCH) would go untested.
            case .ietf: return try await w.run(["upload", src, base + "/f.bin", "--interop-version", "6"] + extra)
            case .plain: return try await w.run(["upload", src, base + "/f.bin", "--protocol", "plain"] + extra)
            case .tus: return try await w.run(["upload", src, base + "/files/"] + extra)
            case .s3Upload:
                return try await s3!.run(
                    ["upload", src, s3!.url("f.bin"), "--part-size", "5M", "--endpoint-url", base] + extra)
            case .stdin:
                return try await piped(["upload", "-", base + "/f.bin"] + extra, from: "cat '\(src)'")
            }
        }

        /// SHA-256 of what arrived where the route delivers.
        func delivered() async throws -> String {
            switch route {
            case .download, .segmented, .stdout, .s3Download: return try sha256(file: w.out + "/f.bin")
            case .list: return try sha256(file: w.path("fetched/f.bin"))
            case .ietf, .plain, .stdin: return try peer!.storedSHA256("f.bin")
            case .tus:
                let uploads = tus!.storedUploads()
                try #require(uploads.count == 1, "\(uploads)")
                return try sha256(file: tus!.files.path(uploads[0]))
            case .s3Upload: return try await s3!.moto.sha256(s3!.bucket, "f.bin")
            }
        }

        /// A stream route through the suites' one pipeline helper: resumectl's exit status, its stderr without the
        /// helper's `status=` line.
        private func piped(_ args: [String], from producer: String? = nil, into consumer: String? = nil) async throws
            -> ProcessResult
        {
            let (r, status) = try await pipeline(w, producer: producer, args, into: consumer, timeout: .seconds(120))
            let stderr = r.stderr.split(separator: "\n", omittingEmptySubsequences: false).filter {
                !$0.hasPrefix("status=")
            }
            return ProcessResult(
                status: status, signaled: false, stdout: r.stdout, stderr: stderr.joined(separator: "\n"))
        }

    }
}
