import Foundation

#if canImport(Glibc)
    import Glibc
#endif

// Small POSIX socket helpers shared by `freePort`, `NginxServer` and `FaultProxy`. IPv4 loopback only:
// every peer in these tests lives on 127.0.0.1.

/// A port on 127.0.0.1 that was free a moment ago: bound to port 0, read back, closed.
///
/// Only for programs that must be told a port up front (nginx); they must retry on "address in use",
/// because another test may take the port in between. Servers written here bind port 0 themselves.
public func freePort() throws -> Int {
    let fd = try SocketFD.listening(port: 0, backlog: 1)
    defer { close(fd) }
    return try SocketFD.localPort(fd)
}

/// Whether something accepts TCP connections on 127.0.0.1:`port` right now.
public func isAcceptingConnections(port: Int) -> Bool {
    guard let fd = try? SocketFD.connect(port: port) else { return false }
    close(fd)
    return true
}

enum SocketFD {
    static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = in_addr_t(UInt32(0x7F00_0001).bigEndian)
        return address
    }

    static func error(_ what: String) -> SupportError {
        SupportError("\(what): \(String(cString: strerror(errno)))")
    }

    /// A listening, blocking, close-on-exec socket on 127.0.0.1:`port`.
    static func listening(port: Int, backlog: Int32 = 128) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw error("socket") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = loopback(port: port)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, backlog) == 0 else {
            let failure = error("bind/listen on 127.0.0.1:\(port)")
            close(fd)
            throw failure
        }
        return fd
    }

    /// A connected, blocking, close-on-exec socket to 127.0.0.1:`port`.
    static func connect(port: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw error("socket") }
        var address = loopback(port: port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            let failure = error("connect to 127.0.0.1:\(port)")
            close(fd)
            throw failure
        }
        return fd
    }

    static func localPort(_ fd: Int32) throws -> Int {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard ok == 0 else { throw error("getsockname") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// `POLLRDHUP` (peer shut down its writing side); Glibc's module hides it behind `_GNU_SOURCE`.
    static let pollReadHangUp: Int32 = 0x2000

    private typealias Accept4 =
        @convention(c) (
            Int32, UnsafeMutablePointer<sockaddr>?,
            UnsafeMutablePointer<socklen_t>?, Int32
        ) -> Int32
    /// `accept4(2)`, hidden behind `_GNU_SOURCE` in the Glibc module.
    private static let accept4: Accept4? = GlibcExtras.symbol("accept4")

    /// Accepts with `SOCK_CLOEXEC` set atomically: a program spawned by a parallel test at that moment
    /// must not inherit the socket, or closing our end would not end the connection.
    static func acceptCloseOnExec(_ listener: Int32) -> Int32 {
        if let accept4 { return accept4(listener, nil, nil, Int32(SOCK_CLOEXEC.rawValue)) }
        let fd = accept(listener, nil, nil)
        if fd >= 0 { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        return fd
    }

    static func setNonBlocking(_ fd: Int32) {
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
    }

    static func setNoDelay(_ fd: Int32) {
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Makes the next `close` send RST instead of FIN and drop unsent data.
    static func setLingerZero(_ fd: Int32) {
        var option = linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
    }

    /// Sends FIN, then reads and discards until the peer closes (at most 2 s) before closing: closing a
    /// socket with unread request bytes would send RST instead, and the client would see a reset.
    static func closeGracefully(_ fd: Int32) {
        shutdown(fd, Int32(SHUT_WR))
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var buffer = [UInt8](repeating: 0, count: 4096)
        while buffer.withUnsafeMutableBytes({ recv(fd, $0.baseAddress, $0.count, 0) }) > 0 {}
        close(fd)
    }

    /// Bytes written to `fd` that the peer has not acknowledged yet (Linux `SIOCOUTQ`).
    static func unsentBytes(_ fd: Int32) -> Int {
        var pending: Int32 = 0
        let siocoutq: UInt = 0x5411  // == TIOCOUTQ
        guard ioctl(fd, siocoutq, &pending) == 0 else { return 0 }
        return Int(pending)
    }
}

/// Signals from the process to a socket or pipe whose peer is gone must not kill the test runner.
let ignoreSIGPIPE: Void = { _ = signal(SIGPIPE, SIG_IGN) }()
