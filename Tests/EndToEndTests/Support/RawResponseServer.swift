import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A server on 127.0.0.1 that answers every request with bytes a test writes by hand, so that it can send
/// what no HTTP library would: two lengths, a NUL in a header, broken chunking, a 200 KB header line.
///
/// Each connection serves one request: the head is read (and a `Content-Length` body drained), the
/// responder's bytes are written, then the connection closes. Blocking sockets, a thread a connection.
final class RawResponseServer: Sendable {
    /// One request as it arrived: the request line's method and target, and the header lines.
    struct Request: Sendable {
        var method: String
        var target: String
        var headers: [String]
        /// 0-based, in arrival order.
        var index: Int
    }

    let port: Int
    private let listener: Int32
    private let seen = Locked<[Request]>([])
    private let stopped = Locked(false)

    /// - Parameter respond: the raw bytes to send for a request (status line, headers, body: all of it).
    init(_ respond: @escaping @Sendable (Request) -> [UInt8]) throws {
        listener = try SocketFD.listening(port: 0)
        port = try SocketFD.localPort(listener)
        let listener = self.listener, seen = self.seen
        Thread.detachNewThread {
            while true {
                let fd = SocketFD.acceptCloseOnExec(listener)
                if fd < 0 {
                    if errno == EINTR || errno == ECONNABORTED { continue }
                    return  // closed by stop()
                }
                Thread.detachNewThread { Self.serve(fd, seen: seen, respond: respond) }
            }
        }
    }

    var baseURL: String { "http://127.0.0.1:\(port)" }
    func url(for path: String = "file.bin") -> String { baseURL + "/" + path }
    var requests: [Request] { seen.withLock { $0 } }

    func stop() {
        guard
            !stopped.withLock({ was in
                defer { was = true }; return was
            })
        else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    deinit { stop() }

    private static func serve(_ fd: Int32, seen: Locked<[Request]>, respond: @Sendable (Request) -> [UInt8]) {
        defer { close(fd) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let end = Array("\r\n\r\n".utf8)
        var headEnd: Int?
        while headEnd == nil, buffer.count < 1 << 20 {
            let n = recv(fd, &chunk, chunk.count, 0)
            if n <= 0 { return }
            buffer += chunk[..<n]
            headEnd = buffer.firstRange(of: end)?.upperBound
        }
        guard let headEnd else { return }
        let lines = String(decoding: buffer[..<(headEnd - 4)], as: UTF8.self).components(separatedBy: "\r\n")
        let parts = lines.first?.split(separator: " ") ?? []
        let headers = Array(lines.dropFirst())
        // Drain a declared body, so that the client is not reset while it still sends.
        let length =
            headers.compactMap { line -> Int? in
                let pair = line.split(separator: ":", maxSplits: 1)
                guard pair.count == 2, pair[0].lowercased() == "content-length" else { return nil }
                return Int(pair[1].trimmingCharacters(in: .whitespaces))
            }.first ?? 0
        var body = buffer.count - headEnd
        while body < length {
            let n = recv(fd, &chunk, min(chunk.count, length - body), 0)
            if n <= 0 { break }
            body += n
        }
        let request = seen.withLock { list -> Request in
            let r = Request(
                method: parts.first.map(String.init) ?? "", target: parts.count > 1 ? String(parts[1]) : "",
                headers: headers, index: list.count)
            list.append(r)
            return r
        }
        let bytes = respond(request)
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { break }
            sent += n
        }
        shutdown(fd, Int32(SHUT_WR))
        // Let the client read to the end before the close (a close with unread input would reset).
        while recv(fd, &chunk, chunk.count, 0) > 0 {}
    }
}

/// A response head in CRLF lines plus a body, as raw bytes.
func rawResponse(_ statusLine: String, _ headers: [String], body: [UInt8] = []) -> [UInt8] {
    Array(([statusLine] + headers + ["", ""]).joined(separator: "\r\n").utf8) + body
}
