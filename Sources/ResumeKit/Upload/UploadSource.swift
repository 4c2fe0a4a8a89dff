/// Where an upload's bytes come from: a file, or a stream's spool (`upload -`). Bodies are read by offset.
protocol UploadSource: AnyObject {
    var fd: Int32 { get }
    /// For events and records: the file's path, or `-` for stdin.
    var path: String { get }
    /// The digest of `range` (S3 wants a part's MD5 both as hex and as base64).
    func digestBytes(_ range: BodyRange, _ algorithm: DigestAlgorithm) throws(TransferError) -> [UInt8]
    /// SHA-256 of everything uploaded, for `--json`; nil when it cannot be known (a stream resumed by
    /// another process no longer has its first bytes).
    func sha256() throws(TransferError) -> String?
}
