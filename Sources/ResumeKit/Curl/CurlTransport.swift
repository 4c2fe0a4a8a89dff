import CCurl

/// The real transport: libcurl's easy interface on the calling thread, or with ``multi()`` every exchange of
/// all its sessions on one thread through libcurl's multi interface, sharing one connection cache.
public struct CurlTransport: HTTPTransport {
    public static let userAgent = "resumectl/\(ResumeKitVersion.string)"

    private let driver: MultiDriver?

    public init() { driver = nil }

    private init(driver: MultiDriver) { self.driver = driver }

    /// A transport whose exchanges all run on one multi handle; call ``shutdown()`` when done with it.
    public static func multi() throws -> CurlTransport { CurlTransport(driver: try MultiDriver()) }

    public func makeSession() -> any TransportSession { CurlSession(driver: driver) }

    /// A session that starts exchanges without waiting: only on a multi transport, whose thread runs them.
    func makeStartingSession() -> (any StartingSession)? { driver.map { CurlSession(driver: $0) } }

    /// Made with ``multi()``: its sessions already share one connection cache.
    var isMulti: Bool { driver != nil }

    /// Stops the multi interface's thread, once every session is finished. Nothing for an easy transport.
    public func shutdown() { driver?.shutdown() }
}
