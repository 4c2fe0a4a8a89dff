import Glibc

/// SHA-256 of a whole file, read in 256 KiB pieces.
public enum FileDigest {
    public static func sha256(path: String) throws(TransferError) -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw TransferError(.inputMissing, "cannot read \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        guard let digest = sha256(fd: fd) else {
            throw TransferError(.localIO, "cannot read \(path): \(String(cString: strerror(errno)))")
        }
        return digest.hex
    }

    /// The SHA-256 of the file open at `fd`, read with pread (its offset stays; serve's `Repr-Digest` too);
    /// `nil` when a read fails.
    public static func sha256(fd: Int32) -> [UInt8]? {
        var hasher = MessageDigest(.sha256)
        // as fast as 1 MiB, a quarter of the pages
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 << 10, alignment: 16)
        defer { buffer.deallocate() }
        var offset: off_t = 0
        while true {
            let n = uninterrupted { pread(fd, buffer.baseAddress, buffer.count, offset) }
            if n < 0 { return nil }
            if n == 0 { return hasher.finalize() }
            hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
            offset += off_t(n)
        }
    }

    /// The digest of `ranges` of an open file, one after the other (a body checksum: tus `Upload-Checksum`,
    /// S3 `Content-MD5`; the edges of an upload's source).
    static func digest(fd: Int32, ranges: [BodyRange], _ algorithm: DigestAlgorithm, path: String) throws(TransferError)
        -> [UInt8]
    {
        var hasher = algorithm.hasher()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 128 << 10, alignment: 16)
        defer { buffer.deallocate() }
        for range in ranges {
            var got: Int64 = 0
            while got < range.length {
                let n = uninterrupted {
                    pread(
                        fd, buffer.baseAddress!, Int(min(Int64(buffer.count), range.length - got)),
                        off_t(range.offset + got))
                }
                guard n > 0 else {
                    throw TransferError(
                        .localIO,
                        "cannot read \(path): \(n == 0 ? "the file got shorter" : String(cString: strerror(errno)))")
                }
                hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
                got += Int64(n)
            }
        }
        return hasher.digestBytes()
    }
}
