/// What `FaultProxy` does to one TCP connection.
///
/// Directions are named from the client's point of view: **downstream** bytes flow from the upstream server
/// to the client (a download's body), **upstream** bytes from the client to the server (an upload's body).
/// Byte counts are exact: a cut after N downstream bytes delivers exactly N bytes to the client.
public struct Fault: Sendable, Equatable, CustomStringConvertible {
    public enum Direction: Sendable, Equatable { case upstream, downstream }

    public enum Action: Sendable, Equatable {
        /// Close both sides with FIN (the client sees a clean EOF before the announced length).
        case close
        /// Close both sides with RST (`SO_LINGER` 0), once the bytes already sent are acknowledged.
        case reset
        /// Stop forwarding in both directions and keep both sockets open, for `duration` or (nil) until the
        /// client gives up or the proxy stops. The client's disconnect is noticed and passed on upstream.
        case stall(Duration?)
        /// The server goes away: every live connection is reset and new ones are refused for `duration`.
        case goneFor(Duration)
    }

    /// Act after this many bytes in this direction (nil: never).
    public var trigger: (direction: Direction, bytes: Int, action: Action)?
    /// Close the connection at accept, before anything reaches upstream (RST if `refuseWithReset`).
    public var refuse: Bool
    public var refuseWithReset: Bool
    /// Forward at most this many bytes per second in each direction (nil: as fast as possible).
    public var bytesPerSecond: Int?
    /// Answer the request with these bytes instead of forwarding it, then close (a busy server's 503).
    public var answer: String?
    /// The trigger fires on the first connection that reaches it, and on no other (a plan that repeats one
    /// fault for every connection, when which connection carries the body is not known in advance).
    public var once = false
    /// The trigger waits, holding its direction, until an interim (`1xx`) response went to the client on this
    /// connection: a cut in a resumable upload's creation then comes after the server named the upload (its
    /// 104 with `Location`), however slowly the server answers under load.
    public var afterInterim = false

    public init(
        trigger: (direction: Direction, bytes: Int, action: Action)? = nil,
        refuse: Bool = false, refuseWithReset: Bool = false, bytesPerSecond: Int? = nil
    ) {
        self.trigger = trigger
        self.refuse = refuse
        self.refuseWithReset = refuseWithReset
        self.bytesPerSecond = bytesPerSecond
    }

    /// Forward everything untouched.
    public static let pass = Fault()

    /// Cut (FIN, or RST with `reset`) after `bytes` from the server reached the client.
    public static func cutAfterDownstream(bytes: Int, reset: Bool = false) -> Fault {
        Fault(trigger: (.downstream, bytes, reset ? .reset : .close))
    }

    /// Cut (FIN, or RST with `reset`) after `bytes` from the client reached the server.
    public static func cutAfterUpstream(bytes: Int, reset: Bool = false) -> Fault {
        Fault(trigger: (.upstream, bytes, reset ? .reset : .close))
    }

    /// Stop forwarding after `bytes` reached the client; resume after `duration` (nil: never).
    public static func stallAfterDownstream(bytes: Int, for duration: Duration? = nil) -> Fault {
        Fault(trigger: (.downstream, bytes, .stall(duration)))
    }

    /// Stop forwarding after `bytes` reached the server; resume after `duration` (nil: never).
    public static func stallAfterUpstream(bytes: Int, for duration: Duration? = nil) -> Fault {
        Fault(trigger: (.upstream, bytes, .stall(duration)))
    }

    /// The server goes away for `duration` once `bytes` passed in `direction`: live connections are reset and
    /// new ones refused until then.
    public static func goneAfter(_ direction: Direction, bytes: Int, for duration: Duration) -> Fault {
        Fault(trigger: (direction, bytes, .goneFor(duration)))
    }

    /// Reads the request head and answers `503` with `Retry-After` instead of forwarding; the body, if any,
    /// is not read.
    public static func busy(retryAfter seconds: Int) -> Fault {
        var fault = Fault()
        fault.answer =
            "HTTP/1.1 503 Service Unavailable\r\nRetry-After: \(seconds)\r\nContent-Length: 0\r\nConnection: "
            + "close\r\n\r\n"
        return fault
    }

    /// This fault with its trigger fired once across all connections (see ``once``).
    public func firingOnce() -> Fault {
        var copy = self
        copy.once = true
        return copy
    }

    /// This fault with its trigger held until a `1xx` reached the client (see ``afterInterim``).
    public func afterInterimResponse() -> Fault {
        var copy = self
        copy.afterInterim = true
        return copy
    }

    /// Close the connection right after accepting it (FIN, or RST with `reset`): "server unreachable".
    public static func refuse(reset: Bool = false) -> Fault {
        Fault(refuse: true, refuseWithReset: reset)
    }

    /// Forward slowly in both directions.
    public static func throttle(bytesPerSecond: Int) -> Fault {
        Fault(bytesPerSecond: bytesPerSecond)
    }

    /// This fault, forwarding at most `bytesPerSecond` in each direction.
    public func throttled(bytesPerSecond: Int) -> Fault {
        var copy = self
        copy.bytesPerSecond = bytesPerSecond
        return copy
    }

    /// `count` cuts at byte offsets drawn from `bytes` by a seeded generator: the same seed gives the same
    /// plan, so a failure seen once can be replayed.
    public static func randomCuts(
        seed: UInt64, count: Int, direction: Direction, bytes: ClosedRange<Int>, reset: Bool = false
    ) -> [Fault] {
        var generator = SeededGenerator(seed: seed)
        return (0..<count).map { _ in
            let at = Int.random(in: bytes, using: &generator)
            return direction == .downstream
                ? .cutAfterDownstream(bytes: at, reset: reset) : .cutAfterUpstream(bytes: at, reset: reset)
        }
    }

    public static func == (a: Fault, b: Fault) -> Bool {
        a.refuse == b.refuse && a.refuseWithReset == b.refuseWithReset && a.bytesPerSecond == b.bytesPerSecond
            && a.answer == b.answer && a.once == b.once && a.afterInterim == b.afterInterim
            && a.trigger?.direction == b.trigger?.direction && a.trigger?.bytes == b.trigger?.bytes
            && a.trigger?.action == b.trigger?.action
    }

    public var description: String {
        var parts: [String] = []
        if refuse { parts.append(refuseWithReset ? "refuse(reset)" : "refuse") }
        if let trigger { parts.append("\(trigger.action) after \(trigger.bytes) \(trigger.direction) bytes") }
        if let bytesPerSecond { parts.append("throttle \(bytesPerSecond) B/s") }
        if let answer { parts.append("answer \(answer.prefix(12))") }
        return parts.isEmpty ? "pass" : parts.joined(separator: ", ")
    }
}
