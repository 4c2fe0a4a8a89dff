/// The facts about an opened file that its validators are made of.
struct FileIdentity: Equatable, Sendable {
    var inode: UInt64
    var size: Int64
    var modifiedSeconds: Int64
    var modifiedNanoseconds: Int64

    /// Strong entity tag. The inode catches a replace-by-rename and the nanoseconds catch a rewrite
    /// within the same second, both of which an `"<mtime>-<size>"` tag (nginx's) misses.
    var etag: String {
        let nanoseconds = modifiedSeconds &* 1_000_000_000 &+ modifiedNanoseconds
        return "\"\(String(inode, radix: 16))-\(String(nanoseconds, radix: 16))-\(String(size, radix: 16))\""
    }

    var lastModified: String {
        IMFDate.format(epochSeconds: modifiedSeconds)
    }

    /// Whether `Last-Modified` may serve as a strong validator at `now` (RFC 9110 §8.8.2.2): a file
    /// changed during the second its date names could change again unnoticed within that second.
    func lastModifiedIsStrong(now: Int64) -> Bool {
        now > modifiedSeconds
    }
}
