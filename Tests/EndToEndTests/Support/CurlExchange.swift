import Foundation

/// One run of the curl CLI as an independent HTTP client: every header block it saw (1xx included),
/// the body, and its exit status. `-sS` always; headers and body go through files, not pipes.
struct CurlExchange: Sendable {
    struct Head: Sendable {
        var status: Int
        var fields: [String: String]
        subscript(_ name: String) -> String? { fields[name] }
    }

    var exit: Int32
    var heads: [Head]
    var body: Data
    var stderr: String

    var status: Int { heads.last?.status ?? 0 }
    var interim: [Head] { heads.filter { $0.status < 200 } }
    subscript(_ name: String) -> String? { heads.last?[name] }

    static func run(_ arguments: [String], timeout: Duration = .seconds(120)) async throws -> CurlExchange {
        let scratch = try TempDirectory(prefix: "resumectl-curl")
        let headers = scratch.path("headers")
        let body = scratch.path("body")
        _ = FileManager.default.createFile(atPath: body, contents: nil)
        let r = try await runProcess(curlBinary, ["-sS", "-D", headers, "-o", body] + arguments, timeout: timeout)
        let text = (try? String(contentsOfFile: headers, encoding: .isoLatin1)) ?? ""
        return CurlExchange(
            exit: r.status, heads: parse(text), body: (try? Data(contentsOf: URL(fileURLWithPath: body))) ?? Data(),
            stderr: r.stderr)
    }

    private static func parse(_ text: String) -> [Head] {
        var heads: [Head] = []
        for line in text.split(separator: "\r\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("HTTP/") {
                heads.append(
                    Head(status: line.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0, fields: [:]))
            } else if let colon = line.firstIndex(of: ":"), !heads.isEmpty {
                let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                heads[heads.count - 1].fields[line[..<colon].lowercased()] = value
            }
        }
        return heads
    }
}

/// A raw TCP exchange with a server on 127.0.0.1, for what no polite client sends (a head a byte at a
/// time, a length no disk holds). Blocking socket calls run on a thread of their own (``offPool``), never
/// on Swift's cooperative pool, which has a thread per core and is shared by every test running at once.
enum RawHTTP {
    /// Runs blocking `work` on a new thread and awaits its result.
    static func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try work() }) }.start()
        }
    }

    /// ``exchange(port:_:wait:)`` off the cooperative pool.
    static func exchangeOffPool(port: Int, _ request: String, wait: Duration = .seconds(2)) async throws -> (
        String, closed: Bool
    ) {
        try await offPool { try exchange(port: port, request, wait: wait) }
    }

    /// Sends `request` on a fresh connection and reads until the server closes or `wait` passes.
    /// Returns what came back and whether the server closed the connection.
    static func exchange(port: Int, _ request: String, wait: Duration = .seconds(2)) throws -> (String, closed: Bool) {
        let fd = try SocketFD.connect(port: port)
        defer { close(fd) }
        _ = Array(request.utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        return read(fd, until: ContinuousClock.now + wait)
    }

    /// Reads from `fd` until the peer closes or `deadline`; `closed` tells which.
    static func read(_ fd: Int32, until deadline: ContinuousClock.Instant) -> (String, closed: Bool) {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while ContinuousClock.now < deadline {
            var pollFD = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pollFD, 1, 50) > 0 else { continue }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n > 0 {
                received += buffer[0..<n]
            } else if n == 0 || (errno != EAGAIN && errno != EINTR) {
                return (String(decoding: received, as: UTF8.self), true)
            }
        }
        return (String(decoding: received, as: UTF8.self), false)
    }
}
