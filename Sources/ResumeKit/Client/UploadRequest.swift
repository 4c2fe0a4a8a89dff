/// What `resumectl upload` asks for.
public struct UploadRequest: Sendable, Equatable {
    public var filePath: String
    public var url: String
    public var headers: [String]
    /// Pin a draft interop version instead of negotiating from the newest.
    public var interopVersion: InteropVersion?
    /// Send the file in appends of at most this many bytes.
    public var chunkSize: Int64?
    /// The protocol to speak; `auto` asks the token, else one OPTIONS probe.
    public var uploadProtocol: UploadProtocolChoice
    /// For `s3://BUCKET/KEY` URLs: endpoint, region, profile, part size, parallel parts.
    public var s3: S3Options
    /// For a stream (`filePath` `-`, stdin): the most bytes its spool holds (default 1 GiB).
    public var spoolMax: Int64?
    /// Requests at once for one file (`--connections`): partial uploads to a tus server that offers
    /// concatenation; any other server takes one, and is said to.
    public var connections: Int
    /// What the protocol probe of a batch found once for all its files (nil: probe, unless pinned).
    var probed: ProtocolProbe?
    /// The batch (`b-…`) this file's upload belongs to; its token says so.
    var batch: String?

    public init(
        filePath: String, url: String, headers: [String] = [], interopVersion: InteropVersion? = nil,
        chunkSize: Int64? = nil,
        uploadProtocol: UploadProtocolChoice = .auto, s3: S3Options = S3Options(), spoolMax: Int64? = nil,
        connections: Int = 1
    ) {
        self.connections = connections
        self.s3 = s3
        self.spoolMax = spoolMax
        self.filePath = filePath
        self.url = url
        self.headers = headers
        self.interopVersion = interopVersion
        self.chunkSize = chunkSize
        self.uploadProtocol = uploadProtocol
    }
}

extension UploadRequest {
    /// The protocol the request fixes without asking the server: `--protocol ietf|tus|plain`, or an
    /// `--interop-version` (IETF); nil for `auto`, which probes.
    var pinnedWire: ResumeToken.UploadPart.Wire? {
        switch uploadProtocol {
        case .auto: interopVersion.map { .ietf($0) }
        case .ietf: .ietf(interopVersion ?? .newest)
        case .tus: .tus(expires: nil, checksum: nil)
        case .plain: .plain
        }
    }
}
