import Glibc

/// What the machine has still to write to disk (the `Dirty` and `Writeback` lines of /proc/meminfo), which
/// decides how a list's group of small files is made durable. `syncfs` writes back every dirty page of the
/// file system, other programs' too: beside a copy of gigabytes, one `syncfs` waits for all of it (a list of
/// 1,000 files of 4 KiB took 4.3 s instead of 0.3 with 2.4 GB of another program's data dirty).
enum WritebackBacklog {
    /// Others' unwritten bytes that a `syncfs` may wait for beside the group's own.
    static let tolerated: Int64 = 64 << 20

    /// Whether one `syncfs` per file system should make a group of `own` bytes durable, rather than an
    /// `fdatasync` per file: when the backlog is mostly the group's, or cannot be read.
    static func prefersSyncfs(own: Int64, backlog: Int64?) -> Bool {
        backlog.map { $0 <= own + tolerated } ?? true
    }

    /// The machine's backlog in bytes, or nil when /proc/meminfo cannot be read.
    static func current() -> Int64? {
        let fd = open("/proc/meminfo", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 8192) { buffer in
            var count = 0
            while count < buffer.count {
                let n = uninterrupted { read(fd, buffer.baseAddress! + count, buffer.count - count) }
                if n <= 0 { break }
                count += n
            }
            return parse(bytes: UnsafeBufferPointer(rebasing: buffer[..<count]))
        }
    }

    /// `Dirty` plus `Writeback` of meminfo's text, in bytes; nil when either line is missing.
    static func parse(_ meminfo: String) -> Int64? {
        var text = meminfo
        return text.withUTF8 { parse(bytes: $0) }
    }

    /// The same on the file's bytes. A list's publisher reads meminfo before every group: split into
    /// Swift strings, its 50 lines cost 9 % of a 1,000-file list's CPU.
    static func parse(bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
        var dirty: Int64?
        var writeback: Int64?
        var i = 0
        while i < bytes.count, dirty == nil || writeback == nil {
            var end = i
            while end < bytes.count, bytes[end] != UInt8(ascii: "\n") { end += 1 }
            let line = UnsafeBufferPointer(rebasing: bytes[i..<end])
            if line.starts(with: dirtyLabel) {
                dirty = kibibytes(line.dropFirst(dirtyLabel.count))
            } else if line.starts(with: writebackLabel) {
                writeback = kibibytes(line.dropFirst(writebackLabel.count))
            }
            i = end + 1
        }
        guard let dirty, let writeback else { return nil }
        return dirty + writeback
    }

    private static let dirtyLabel = Array("Dirty:".utf8)
    private static let writebackLabel = Array("Writeback:".utf8)

    /// The number after the label's spaces (kB), in bytes.
    private static func kibibytes(_ rest: Slice<UnsafeBufferPointer<UInt8>>) -> Int64? {
        let digits = rest.drop { $0 == UInt8(ascii: " ") }.prefix { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
        guard !digits.isEmpty, digits.count < 16 else { return nil }
        return digits.reduce(Int64(0)) { $0 * 10 + Int64($1 - UInt8(ascii: "0")) } << 10
    }
}
