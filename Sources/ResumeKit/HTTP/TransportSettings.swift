/// Knobs of the transport that hold for every exchange of one transfer.
public struct TransportSettings: Sendable, Equatable {
    /// No byte moved in either direction for this long counts as a stall.
    public var stallTimeout: Int = 30
    public var connectTimeout: Int = 30
    /// Bytes a second, 0 for no limit.
    public var maxReceiveRate: Int64 = 0
    public var maxSendRate: Int64 = 0
    /// libcurl's receive buffer: its 16 KiB default is measurably slower, and 512 KiB (its largest) beat
    /// 256 KiB on a 1 GiB download by 10 % in wall and 13 % in CPU (9 pairs, with a 1 MiB gatherer).
    public var receiveBufferSize: Int = 512 * 1024
    /// libcurl's send buffer, at its largest (2 MiB): a 1 GiB one-request upload against 512 KiB, 21
    /// pairs, CPU 0.77 at the same wall (1 MiB measured no different from 512 KiB), for 0.9 MiB of peak.
    public var uploadBufferSize: Int = 2048 * 1024
    public var verbose: Bool = false
    /// TLS, proxy, address family, HTTP version: what the token keeps.
    public var connection = ConnectionSettings()
    /// User names and passwords for this run only.
    public var credentials = Credentials()
    /// The origin that may receive `credentials.user`: the URL the user named. Nil sends them to every URL.
    public var credentialOrigin: String?
    /// Signs every request of the transfer as it is sent (S3); nil for plain HTTP.
    public var signing: SigningHook?

    public init() {}
}
