import Foundation
import Testing

/// One test's world: a temp folder with `state/` (tokens) and `out/`, and the built binary run inside it.
struct Workspace {
    let dir: TempDirectory
    var state: String { dir.path("state") }
    var out: String { dir.path("out") }

    init() throws {
        dir = try TempDirectory()
        try dir.subdirectory("state")
        try dir.subdirectory("out")
        try dir.subdirectory("www")
    }

    func path(_ name: String) -> String { dir.path(name) }

    /// Runs `resumectl ARGS --state-dir STATE` to its end.
    func run(_ args: [String], timeout: Duration = .seconds(120)) async throws -> ProcessResult {
        try await runProcess(resumectlBinary, args + ["--state-dir", state], currentDirectory: out, timeout: timeout)
    }

    /// Starts `resumectl ARGS --state-dir STATE` and returns at once.
    func start(_ args: [String]) throws -> RunningProcess {
        try RunningProcess(resumectlBinary, args + ["--state-dir", state], currentDirectory: out)
    }

    /// The ids of the tokens on disk.
    func tokens() throws -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: state + "/tokens")) ?? []
        return names.filter { $0.hasSuffix(".json") }.map { String($0.dropLast(5)) }.sorted()
    }

    func token(_ id: String) throws -> [String: Any] {
        let data = try Data(contentsOf: URL(fileURLWithPath: state + "/tokens/\(id).json"))
        return try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
    }

    func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }

    func size(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? -1
    }
}

/// The `--json` event stream, one object a line; fails the test on a line that is not JSON.
func events(_ stdout: String) -> [[String: Any]] {
    stdout.split(separator: "\n").compactMap { line in
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
            Issue.record("stdout line is not JSON: \(line)")
            return nil
        }
        return object
    }
}

func names(_ events: [[String: Any]]) -> [String] { events.compactMap { $0["event"] as? String } }

extension Array where Element == [String: Any] {
    func first(_ name: String) -> [String: Any]? { first { $0["event"] as? String == name } }
}
