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
        guard let backlog else { return true }
        return backlog <= own + tolerated
    }

    /// The machine's backlog in bytes, or nil when /proc/meminfo cannot be read.
    static func current() -> Int64? {
        let fd = open("/proc/meminfo", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 8192)
        var count = 0
        while count < buffer.count {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + count, $0.count - count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            count += n
        }
        return parse(String(decoding: buffer[..<count], as: UTF8.self))
    }

    /// `Dirty` plus `Writeback` of meminfo's text, in bytes; nil when either line is missing.
    static func parse(_ meminfo: String) -> Int64? {
        var dirty: Int64?
        var writeback: Int64?
        for line in meminfo.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 2, let kib = Int64(fields[1]) else { continue }
            switch fields[0] {
            case "Dirty:": dirty = kib << 10
            case "Writeback:": writeback = kib << 10
            default: continue
            }
        }
        guard let dirty, let writeback else { return nil }
        return dirty + writeback
    }
}
