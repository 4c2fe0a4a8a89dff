/// What `resumectl download` asks for.
public struct DownloadRequest: Sendable, Equatable {
    public var url: String
    /// Where the finished file goes; a folder means "inside it, under the URL's name".
    public var outputPath: String?
    /// `Name: value` lines sent with every request.
    public var headers: [String]
    /// Expected SHA-256 in hex.
    public var expectedSHA256: String?
    public var onChange: DownloadStateMachine.OnChange
    /// Replace an existing file at the output path.
    public var force: Bool
    /// For `s3://BUCKET/KEY` URLs: endpoint, region, profile.
    public var s3: S3Options
    /// The size a folder's listing gives: a file known to be larger than a small one is not begun by a
    /// list's small-file pass, whose dropped exchange would waste what the network had in flight.
    public var listedSize: Int64?
    /// More URLs of the same file (`--mirror`, a Metalink's): segments are spread over all of them. Bytes of
    /// several servers are joined only when `expectedSHA256` or `pieces` vouch for them.
    public var mirrors: [String] = []
    /// A Metalink's piece hashes, checked as each piece lands.
    public var pieces: ResumeToken.Pieces?

    public init(
        url: String, outputPath: String? = nil, headers: [String] = [], expectedSHA256: String? = nil,
        onChange: DownloadStateMachine.OnChange = .restart, force: Bool = false, s3: S3Options = S3Options()
    ) {
        self.s3 = s3
        self.url = url
        self.outputPath = outputPath
        self.headers = headers
        self.expectedSHA256 = expectedSHA256
        self.onChange = onChange
        self.force = force
    }
}
