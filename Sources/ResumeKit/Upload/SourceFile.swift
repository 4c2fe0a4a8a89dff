import Glibc

/// An upload's source, open for the whole upload, with the identity a token records.
final class SourceFile: UploadSource {
    let path: String
    let fd: Int32
    let identity: ResumeToken.SourceIdentity

    /// Opens `path` for reading. Missing, unreadable and folder are errors with exit 66.
    init(path: String) throws(TransferError) {
        let standardized = OutputPath.absolute(path)
        let fd = open(standardized, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw TransferError(.inputMissing, "cannot read \(path): \(String(cString: strerror(errno)))")
        }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            throw TransferError(.inputMissing, "\(path) is not a regular file")
        }
        self.path = standardized
        self.fd = fd
        let size = Int64(st.st_size)
        let mtime = Double(st.st_mtim.tv_sec) + Double(st.st_mtim.tv_nsec) / 1e9
        identity = ResumeToken.SourceIdentity(
            path: standardized, size: size, mtime: mtime, inode: UInt64(st.st_ino),
            edgeHash: try Self.edgeHash(fd: fd, size: size, path: path))
    }

    deinit { close(fd) }

    /// SHA-256 of the first and the last MiB: cheap, and catches edits at either end.
    static func edgeHash(fd: Int32, size: Int64, path: String) throws(TransferError) -> String {
        let mib: Int64 = 1 << 20
        let edges = Set([0, max(0, size - mib)]).sorted().map { BodyRange(offset: $0, length: min(mib, size - $0)) }
        return try FileDigest.digest(fd: fd, ranges: edges, .sha256, path: path).hex
    }

    /// The base64 digest of `range` of the file, for a protocol's body checksum (tus `Upload-Checksum`).
    func digestBytes(_ range: BodyRange, _ algorithm: DigestAlgorithm) throws(TransferError) -> [UInt8] {
        try FileDigest.digest(fd: fd, ranges: [range], algorithm, path: path)
    }

    /// The file's sha256 (read once more; only when `--json` asks for it).
    func sha256() throws(TransferError) -> String? { try FileDigest.sha256(path: path) }
}
