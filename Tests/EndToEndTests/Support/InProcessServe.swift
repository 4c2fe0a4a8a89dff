import Foundation
import ResumeServer

/// `resumectl serve`'s server started inside the test process over a fresh folder, with its log
/// lines kept for assertions. Port 0 and a temporary folder: tests using it run in parallel.
final class InProcessServe: Sendable {
    let server: ResumeServer
    let folder: TempDirectory
    private let lines: Locked<[String]>

    var url: String { server.url }
    var port: Int { server.port }
    var log: [String] { lines.withLock { $0 } }

    /// Starts a server; `configure` adjusts the configuration (directory, port 0 and log are set).
    init(_ configure: (inout ServerConfiguration) -> Void = { _ in }) async throws {
        folder = try TempDirectory(prefix: "resumectl-serve")
        let lines = Locked<[String]>([])
        self.lines = lines
        var configuration = ServerConfiguration(
            directory: folder.path, port: 0, log: { line in lines.withLock { $0.append(line) } })
        configure(&configuration)
        server = try await ResumeServer.start(configuration)
    }

    /// Runs `body` with a fresh server and always shuts it down.
    static func with<T>(
        _ configure: (inout ServerConfiguration) -> Void = { _ in },
        _ body: (InProcessServe) async throws -> T
    ) async throws -> T {
        let served = try await InProcessServe(configure)
        do {
            let result = try await body(served)
            try await served.server.shutdown()
            return result
        } catch {
            try? await served.server.shutdown()
            throw error
        }
    }

    /// The absolute path of `name` in the served folder.
    func path(_ name: String) -> String { folder.path(name) }
}
