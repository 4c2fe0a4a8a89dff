/// A stream's spool as the body source of ``UploadOperation``: bodies are read by stream offset.
final class SpoolSource: UploadSource {
    let fd: Int32
    private let spoolPath: String
    private let hash: String?
    var path: String { "-" }

    init(fd: Int32, path: String, hash: String?) {
        self.fd = fd
        self.spoolPath = path
        self.hash = hash
    }

    func digestBytes(_ range: BodyRange, _ algorithm: DigestAlgorithm) throws(TransferError) -> [UInt8] {
        try FileDigest.digest(fd: fd, ranges: [range], algorithm, path: spoolPath)
    }

    func sha256() throws(TransferError) -> String? { hash }
}
