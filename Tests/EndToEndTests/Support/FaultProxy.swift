import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A TCP proxy on 127.0.0.1 in front of a server, that breaks connections on purpose.
///
/// Connection *i* (in accept order) follows `plan[i]`; connections past the end of the plan pass through.
/// Plain blocking sockets with one thread per direction keep byte counts exact and the code obvious; every
/// wait is a `poll` of at most 50 ms, so stalls, cuts and `stop()` take effect promptly, and a socket is
/// closed only after both of its threads are done with it (no file-descriptor reuse races).
///
/// ```swift
/// let proxy = try FaultProxy(upstreamPort: nginx.port,
///                            plan: [.cutAfterDownstream(bytes: 1_000_000), .pass])
/// // first connection: the client receives exactly 1,000,000 bytes, then EOF; later ones pass.
/// ```
public final class FaultProxy: Sendable {
    public let port: Int
    public let upstreamPort: Int
    private let state: ProxyState

    /// `http://127.0.0.1:PORT`
    public var baseURL: String { "http://127.0.0.1:\(port)" }

    /// `baseURL` + "/" + `path`.
    public func url(for path: String) -> String {
        baseURL + (path.hasPrefix("/") ? path : "/" + path)
    }

    public init(upstreamPort: Int, plan: [Fault] = []) throws {
        _ = ignoreSIGPIPE
        let listener = try SocketFD.listening(port: 0)
        self.port = try SocketFD.localPort(listener)
        self.upstreamPort = upstreamPort
        self.state = ProxyState(listener: listener, upstreamPort: upstreamPort, plan: plan)
        let state = self.state
        Thread { state.acceptLoop() }.start()
    }

    /// Connections accepted so far, refused ones included.
    public var connectionCount: Int { state.locked.withLock { $0.stats.count } }
    /// Bytes forwarded from clients to the server, all connections.
    public var bytesUpstream: Int { state.locked.withLock { $0.stats.reduce(0) { $0 + $1.bytesUpstream } } }
    /// Bytes forwarded from the server to clients, all connections.
    public var bytesDownstream: Int { state.locked.withLock { $0.stats.reduce(0) { $0 + $1.bytesDownstream } } }
    /// One entry per accepted connection, in accept order.
    public var connections: [ConnectionStats] { state.locked.withLock { $0.stats } }

    /// Replaces the plan: the next accepted connection follows `plan[0]`, the one after `plan[1]`, ….
    public func setPlan(_ plan: [Fault]) {
        state.locked.withLock {
            $0.plan = plan; $0.planStart = $0.planCounter
        }
    }

    /// Switches to `plan` once `cuts` connections were cut. For a plan that cuts every connection: which
    /// connection carries enough to be cut (not a HEAD or OPTIONS) is the client's choice, so a fixed plan of
    /// N cuts may cut fewer. Cancel the task returned when the test ends.
    public func switchPlan(afterCuts cuts: Int, to plan: [Fault]) -> Task<Void, Never> {
        Task {
            while connections.filter(\.triggered).count < cuts, !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(10))
            }
            setPlan(plan)
        }
    }

    /// Closes every connection accepted in the next `duration` at once ("server unreachable"), without
    /// consuming plan entries; afterwards connections work again.
    public func refuseConnections(for duration: Duration, reset: Bool = false) {
        state.locked.withLock {
            $0.refusingUntil = ContinuousClock.now + duration
            $0.refuseWithReset = reset
        }
    }

    /// Refuse new connections until called again with `false` (see `refuseConnections(for:)`).
    public func setRefusing(_ refusing: Bool, reset: Bool = false) {
        state.locked.withLock {
            $0.refusingUntil = refusing ? ContinuousClock.now + .seconds(86_400) : nil
            $0.refuseWithReset = reset
        }
    }

    /// Cuts every live connection now (FIN, or RST with `reset`): the network went away mid-transfer.
    public func cutAll(reset: Bool = false) {
        for connection in state.locked.withLock({ Array($0.live.values) }) {
            connection.cut(reset: reset)
        }
    }

    /// Stops accepting, closes every connection and returns once the port is closed.
    public func stop() {
        state.stop()
    }

    deinit { state.stop() }
}

/// What happened to one proxied connection.
public struct ConnectionStats: Sendable {
    public let index: Int
    public let fault: Fault
    public internal(set) var refused = false
    /// True once the fault's byte trigger fired.
    public internal(set) var triggered = false
    public internal(set) var bytesUpstream = 0
    public internal(set) var bytesDownstream = 0
    /// Both sockets are closed (or the connection was refused).
    public internal(set) var closed = false
    /// The request lines seen going upstream (`PATCH /resumable_upload/… HTTP/1.1`), in order.
    public internal(set) var requestLines: [String] = []
}

/// State shared by the proxy object and its threads (the threads never reference `FaultProxy` itself, so
/// dropping the proxy runs its `deinit` and stops everything).
final class ProxyState: @unchecked Sendable {
    struct Shared: Sendable {
        var stopped = false
        var acceptLoopDone = false
        var plan: [Fault]
        var planStart = 0
        var planCounter = 0
        var refusingUntil: ContinuousClock.Instant?
        var refuseWithReset = false
        /// A trigger marked `once` fired.
        var firedOnce = false
        var stats: [ConnectionStats] = []
        var live: [Int: ProxyConnection] = [:]
    }

    let listener: Int32
    let upstreamPort: Int
    let locked: Locked<Shared>

    init(listener: Int32, upstreamPort: Int, plan: [Fault]) {
        self.listener = listener
        self.upstreamPort = upstreamPort
        self.locked = Locked(Shared(plan: plan))
    }

    var isStopped: Bool { locked.withLock { $0.stopped } }

    func acceptLoop() {
        defer {
            close(listener)
            locked.withLock { $0.acceptLoopDone = true }
        }
        while !isStopped {
            var pollFD = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&pollFD, 1, 50) > 0 else { continue }
            let client = SocketFD.acceptCloseOnExec(listener)
            guard client >= 0 else { continue }
            handle(client: client)
        }
    }

    private func handle(client: Int32) {
        let (index, fault, windowRefusal) = locked.withLock { shared -> (Int, Fault, Bool?) in
            let index = shared.stats.count
            if let until = shared.refusingUntil, ContinuousClock.now < until {
                shared.stats.append(
                    ConnectionStats(
                        index: index, fault: .refuse(reset: shared.refuseWithReset),
                        refused: true, closed: true))
                return (index, .pass, shared.refuseWithReset)
            }
            let planIndex = shared.planCounter - shared.planStart
            shared.planCounter += 1
            let fault = planIndex < shared.plan.count ? shared.plan[planIndex] : .pass
            shared.stats.append(
                ConnectionStats(index: index, fault: fault, refused: fault.refuse, closed: fault.refuse))
            return (index, fault, nil)
        }
        if let reset = windowRefusal ?? (fault.refuse ? fault.refuseWithReset : nil) {
            if reset {
                SocketFD.setLingerZero(client)
                close(client)
            } else {
                Thread { SocketFD.closeGracefully(client) }.start()
            }
            return
        }
        if let answer = fault.answer {
            Thread { Self.answer(client, with: answer) }.start()
            return
        }
        guard let upstream = try? SocketFD.connect(port: upstreamPort) else {
            SocketFD.setLingerZero(client)
            close(client)
            locked.withLock { $0.stats[index].closed = true }
            return
        }
        let connection = ProxyConnection(index: index, client: client, upstream: upstream, fault: fault, proxy: self)
        locked.withLock { $0.live[index] = connection }
        connection.start()
    }

    /// Reads up to the end of the request head (at most 5 s), then answers and closes.
    private static func answer(_ client: Int32, with response: String) {
        var head: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < deadline, !head.endsWithBlankLine {
            var pollFD = pollfd(fd: client, events: Int16(POLLIN), revents: 0)
            guard poll(&pollFD, 1, 50) > 0 else { continue }
            let n = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress, 1, 0) }
            if n <= 0 { break }
            head.append(buffer[0])
        }
        let bytes = Array(response.utf8)
        _ = bytes.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        SocketFD.closeGracefully(client)
    }

    /// Resets every live connection and refuses new ones for `duration`: the server went away.
    func goAway(for duration: Duration) {
        let live = locked.withLock { shared -> [ProxyConnection] in
            shared.refusingUntil = ContinuousClock.now + duration
            shared.refuseWithReset = true
            return Array(shared.live.values)
        }
        for connection in live { connection.cut(reset: true) }
    }

    func record(_ index: Int, _ update: (inout ConnectionStats) -> Void) {
        locked.withLock { update(&$0.stats[index]) }
    }

    func connectionClosed(_ index: Int) {
        locked.withLock {
            $0.live[index] = nil
            $0.stats[index].closed = true
        }
    }

    func stop() {
        let connections = locked.withLock { shared -> [ProxyConnection] in
            shared.stopped = true
            return Array(shared.live.values)
        }
        for connection in connections { connection.cut(reset: false) }
        for _ in 0..<100 where !locked.withLock({ $0.acceptLoopDone }) { usleep(5_000) }
    }
}

/// One client connection and its upstream connection, pumped by two threads.
final class ProxyConnection: @unchecked Sendable {
    private struct Control: Sendable {
        var exiting = false
        var reset = false
        var stalledUntil: ContinuousClock.Instant?
        var stalledForever = false
        var threadsDone = 0
        var triggerArmed = true
        /// A `1xx` status line went downstream (for ``Fault/afterInterim``).
        var interimSeen = false
    }

    let index: Int
    let client: Int32
    let upstream: Int32
    let fault: Fault
    private let proxy: ProxyState
    private let control = Locked(Control())

    init(index: Int, client: Int32, upstream: Int32, fault: Fault, proxy: ProxyState) {
        self.index = index
        self.client = client
        self.upstream = upstream
        self.fault = fault
        self.proxy = proxy
        for fd in [client, upstream] {
            SocketFD.setNonBlocking(fd)
            SocketFD.setNoDelay(fd)
        }
    }

    func start() {
        Thread { self.pump(from: self.upstream, to: self.client, direction: .downstream) }.start()
        Thread { self.pump(from: self.client, to: self.upstream, direction: .upstream) }.start()
    }

    /// Ends the connection. FIN goes out at once (`shutdown` wakes the other thread); for RST the sockets
    /// get `SO_LINGER` 0 and the last thread out closes them.
    func cut(reset: Bool) {
        let first = control.withLock { control -> Bool in
            defer { control.exiting = true; control.reset = control.reset || reset }
            return !control.exiting
        }
        guard first else { return }
        if reset {
            SocketFD.setLingerZero(client)
            SocketFD.setLingerZero(upstream)
        } else {
            shutdown(client, Int32(SHUT_RDWR))
            shutdown(upstream, Int32(SHUT_RDWR))
        }
    }

    private var isExiting: Bool { control.withLock { $0.exiting } }

    private func pump(from source: Int32, to destination: Int32, direction: Fault.Direction) {
        defer { threadDone() }
        var buffer = [UInt8](repeating: 0, count: 65536)
        var forwarded = 0
        let started = ContinuousClock.now
        let trigger = fault.trigger?.direction == direction ? fault.trigger : nil
        var requestLines = RequestLineScanner()
        var statusWindow: [UInt8] = []
        while !isExiting && !proxy.isStopped {
            // A trigger reached but waiting for the interim response holds this direction as a stall would.
            if waitWhileStalled(holding: trigger.map { forwarded >= $0.bytes && !mayFire() } ?? false) { continue }
            var limit = buffer.count
            if let rate = fault.bytesPerSecond { limit = min(limit, max(1024, rate / 20)) }
            let armed = control.withLock { $0.triggerArmed }
            if let trigger, armed { limit = min(limit, trigger.bytes - forwarded) }

            var pollFD = pollfd(fd: source, events: Int16(POLLIN), revents: 0)
            guard poll(&pollFD, 1, 50) > 0 else { continue }
            if limit <= 0, let trigger {
                // A trigger at 0 bytes (or one reached exactly): act as data arrives, without forwarding it.
                fire(trigger.action, destination: destination, direction: direction)
                continue
            }
            let n = buffer.withUnsafeMutableBytes { recv(source, $0.baseAddress, limit, 0) }
            if n < 0 {
                if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { continue }
                cut(reset: false)
                break
            }
            if n == 0 {
                // Half-close: pass the EOF on; the other direction may still be sending.
                shutdown(destination, Int32(SHUT_WR))
                break
            }
            guard sendAll(buffer[0..<n], to: destination) else {
                cut(reset: false)
                break
            }
            forwarded += n
            if fault.afterInterim, direction == .downstream { noteInterim(buffer[0..<n], window: &statusWindow) }
            let lines = direction == .upstream ? requestLines.scan(buffer[0..<n]) : []
            proxy.record(index) { stats in
                if direction == .upstream { stats.bytesUpstream += n } else { stats.bytesDownstream += n }
                stats.requestLines += lines
            }
            if let trigger, armed, forwarded >= trigger.bytes, mayFire() {
                fire(trigger.action, destination: destination, direction: direction)
            }
            if let rate = fault.bytesPerSecond {
                let due = started + .seconds(Double(forwarded) / Double(rate))
                while !isExiting {
                    let wait = due - ContinuousClock.now
                    if wait <= .zero { break }
                    Thread.sleep(forTimeInterval: min(0.05, wait.seconds))
                }
            }
        }
    }

    private func fire(_ action: Fault.Action, destination: Int32, direction: Fault.Direction) {
        control.withLock { $0.triggerArmed = false }
        if fault.once {
            let first = proxy.locked.withLock { shared in
                defer { shared.firedOnce = true }
                return !shared.firedOnce
            }
            guard first else { return }
        }
        proxy.record(index) { $0.triggered = true }
        switch action {
        case .close:
            cut(reset: false)
        case .reset:
            // Let the peer receive what was forwarded before it is reset, as a real mid-stream RST would.
            for _ in 0..<200 where SocketFD.unsentBytes(destination) > 0 { usleep(5_000) }
            cut(reset: true)
        case .goneFor(let duration):
            for _ in 0..<200 where SocketFD.unsentBytes(destination) > 0 { usleep(5_000) }
            proxy.goAway(for: duration)
        case .stall(let duration):
            control.withLock {
                if let duration { $0.stalledUntil = ContinuousClock.now + duration } else { $0.stalledForever = true }
            }
        }
    }

    /// Whether the trigger may act now: always, unless it waits for an interim response not yet seen (a `once`
    /// trigger that fired elsewhere waits for nothing: it will not act here).
    private func mayFire() -> Bool {
        guard fault.afterInterim, !(fault.once && proxy.locked.withLock({ $0.firedOnce })) else { return true }
        return control.withLock { !$0.triggerArmed || $0.interimSeen }
    }

    /// Marks the connection once a status line `HTTP/1.1 1xx` passed downstream; `window` keeps the tail of the
    /// bytes seen, so that a line split across reads is found too.
    private func noteInterim(_ bytes: ArraySlice<UInt8>, window: inout [UInt8]) {
        window += bytes
        if String(decoding: window, as: UTF8.self).contains("HTTP/1.1 1") { control.withLock { $0.interimSeen = true } }
        window = Array(window.suffix(16))
    }

    /// While stalled, or `holding` (a trigger waiting for the interim response): forward nothing, but notice a
    /// client that hangs up (a server that answered with a final status instead of a 104 leaves a hold so).
    /// Returns true while stalled or holding.
    private func waitWhileStalled(holding: Bool) -> Bool {
        let stalled =
            holding
            || control.withLock { control -> Bool in
                if control.stalledForever { return true }
                guard let until = control.stalledUntil else { return false }
                if ContinuousClock.now >= until { control.stalledUntil = nil; return false }
                return true
            }
        guard stalled else { return false }
        var pollFD = pollfd(fd: client, events: Int16(SocketFD.pollReadHangUp), revents: 0)
        if poll(&pollFD, 1, 50) > 0,
            pollFD.revents & Int16(SocketFD.pollReadHangUp | Int32(POLLHUP) | Int32(POLLERR)) != 0
        {
            cut(reset: false)
        }
        return true
    }

    private func sendAll(_ bytes: ArraySlice<UInt8>, to fd: Int32) -> Bool {
        var offset = bytes.startIndex
        while offset < bytes.endIndex {
            if isExiting { return false }
            let n = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n > 0 {
                offset += n
            } else if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
                var pollFD = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                _ = poll(&pollFD, 1, 50)
            } else {
                return false
            }
        }
        return true
    }

    private func threadDone() {
        let last = control.withLock { control -> Bool in
            control.threadsDone += 1
            return control.threadsDone == 2
        }
        guard last else { return }
        close(client)
        close(upstream)
        proxy.connectionClosed(index)
    }
}

extension Duration {
    /// The duration in seconds, for APIs that take a `TimeInterval`.
    var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}

private extension [UInt8] {
    /// Whether the bytes end with CRLF CRLF (the end of a request head).
    var endsWithBlankLine: Bool { count >= 4 && suffix(4).elementsEqual([13, 10, 13, 10]) }
}
