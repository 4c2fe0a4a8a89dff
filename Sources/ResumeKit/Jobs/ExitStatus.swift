/// The exit statuses of many transfers as one: the rule of `download -i`, `resume --all`, `wait` and a
/// folder upload's files.
public enum ExitStatus {
    /// Worst first: the failures no resume mends (1 refused or failed, 65 bad data, 64 usage, 73 no
    /// output, 66 missing input, 141 reader gone), then what a resume continues (74 local I/O, 130
    /// Ctrl-C, 75 interrupted). A status not named here counts as a failure for good, right after 1.
    static let severity: [Int32] = [1, 65, 64, 73, 66, 141, 74, 130, 75]

    /// 0 when every transfer succeeded; else the worst status by ``severity`` (the first of equals, in
    /// the order given).
    public static func combined(_ statuses: some Sequence<Int32>) -> Int32 {
        func rank(_ status: Int32) -> Double { severity.firstIndex(of: status).map(Double.init) ?? 0.5 }
        return statuses.filter { $0 != 0 }.min { rank($0) < rank($1) } ?? 0
    }

    /// A wait status as a shell reports it: the exit status, or 128 + the signal.
    static func of(waitStatus status: Int32) -> Int32 {
        (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }
}
