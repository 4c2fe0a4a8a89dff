/// The exit statuses of many transfers as one: the rule of `download -i`, `resume --all` and `wait`.
public enum ExitStatus {
    /// Statuses a later `resume` can turn into success: interrupted or resumable (75), a local I/O error
    /// such as a full disk (74), Ctrl-C (130).
    public static let resumable: Set<Int32> = [74, 75, 130]

    /// 0 when every transfer succeeded; else the status of the first that failed for good (in the order
    /// given); else, every failure being resumable, 75.
    public static func combined(_ statuses: some Sequence<Int32>) -> Int32 {
        let failures = statuses.filter { $0 != 0 }
        if failures.isEmpty { return 0 }
        return failures.first { !resumable.contains($0) } ?? 75
    }

    /// A wait status as a shell reports it: the exit status, or 128 + the signal.
    static func of(waitStatus status: Int32) -> Int32 {
        (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }
}
