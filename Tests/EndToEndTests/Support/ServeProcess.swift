import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The built `resumectl serve` as a child process: started, its port read from `listening on`.
enum ServeProcess {
    /// `resumectl serve FOLDER --port PORT EXTRA…`, through `sh -c 'ulimit -n N; exec …'` when
    /// `descriptors` is set (the shell lowers both limits; serve cannot raise them back).
    static func start(
        folder: String, port: Int = 0, _ extra: [String] = [], descriptors: Int? = nil, currentDirectory: String? = nil
    ) async throws -> (RunningProcess, Int) {
        let arguments = ["serve", folder, "--port", "\(port)"] + extra
        let serve =
            try descriptors.map { limit in
                try RunningProcess(
                    "/bin/sh", ["-c", "ulimit -n \(limit) && exec \"$0\" \"$@\"", resumectlBinary] + arguments)
            } ?? RunningProcess(resumectlBinary, arguments, currentDirectory: currentDirectory)
        return (serve, try await listening(serve).port)
    }

    /// What a started `serve` printed once it listens: its base URL (`http://127.0.0.1:PORT`) and port.
    static func listening(_ serve: RunningProcess, timeout: Duration = .seconds(30)) async throws -> (
        url: String, port: Int
    ) {
        let line = try await serve.waitForLine(timeout: timeout) { $0.hasPrefix("listening on ") }
        let url = String(line.dropFirst("listening on ".count)).trimmingCharacters(in: .whitespaces)
        return (url, try #require(Int(url.split(separator: ":").last ?? ""), "\(line)"))
    }

    /// User plus system CPU time the process has used so far, from /proc.
    static func cpuSeconds(pid: Int32) throws -> Double {
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        // Fields after the command name (which may hold spaces) start at its closing parenthesis.
        let fields = stat[stat.index(after: try #require(stat.lastIndex(of: ")")))...].split(separator: " ")
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        return (try #require(Double(fields[11])) + (try #require(Double(fields[12])))) / ticks
    }

    /// The durable offset of the one unfinished upload in `folder`'s store, from its record.
    static func recordedOffset(folder: String) throws -> Int {
        let store = folder + "/.resumectl-uploads"
        // Plain errors, not expectations: tests poll this until the record exists.
        let names = try FileManager.default.contentsOfDirectory(atPath: store).filter { $0.hasSuffix(".json") }
        guard names.count == 1 else { throw SupportError("one upload record expected: \(names)") }
        let data = try Data(contentsOf: URL(fileURLWithPath: store + "/" + names[0]))
        guard let record = try JSONSerialization.jsonObject(with: data) as? [String: Any],
            let offset = record["offset"] as? Int
        else {
            throw SupportError("an upload record without an offset")
        }
        return offset
    }
}
