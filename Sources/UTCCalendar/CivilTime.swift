/// A UTC date and time of the proleptic Gregorian calendar, to and from seconds since 1970, with the
/// "days from civil" algorithms: the one calendar of the client (HTTP dates, SigV4's timestamps, the
/// state folder's ISO 8601 times, `--start-at`) and of `serve` (its HTTP dates). A target of its own so
/// that the server, which does not link ResumeKit, shares it.
public struct CivilTime: Equatable, Sendable {
    public var year, month, day, hour, minute, second: Int

    public init(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int) {
        (self.year, self.month, self.day, self.hour, self.minute, self.second) = (
            year, month, day, hour, minute, second
        )
    }

    public init(_ seconds: Int64) {
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = Int(seconds - days * 86_400)
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        day = Int(doy - (153 * mp + 2) / 5 + 1)
        month = Int(mp < 10 ? mp + 3 : mp - 9)
        year = Int(yoe + era * 400) + (month <= 2 ? 1 : 0)
        (hour, minute, second) = (secondOfDay / 3600, secondOfDay / 60 % 60, secondOfDay % 60)
    }

    /// Seconds since 1970; nil for a field out of range (a leap second counts as the next second).
    public var seconds: Int64? {
        guard (1...12).contains(month), (1...31).contains(day), (0...23).contains(hour), (0...59).contains(minute),
            // four digits: a longer year overflowed the seconds
            (0...60).contains(second), (1970...9999).contains(year)
        else { return nil }
        let y = month <= 2 ? year - 1 : year
        let era = y / 400
        let yoe = y - era * 400
        let doy = (153 * ((month + 9) % 12) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let days = era * 146_097 + doe - 719_468
        return Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + second)
    }

    /// `YYYY`, `MM`, `DD` joined by `separator`.
    public func date(separator: String) -> String {
        [Self.digits(year, 4), Self.digits(month, 2), Self.digits(day, 2)].joined(separator: separator)
    }

    /// `hh`, `mm`, `ss` joined by `separator`.
    public func time(separator: String) -> String {
        [Self.digits(hour, 2), Self.digits(minute, 2), Self.digits(second, 2)].joined(separator: separator)
    }

    /// 0 for Sunday … 6 for Saturday (1970-01-01 was a Thursday).
    public var weekday: Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * ((month + 9) % 12) + 2) / 5 + day - 1
        let days = era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468
        return ((days + 4) % 7 + 7) % 7
    }

    /// Zero-padded to `width` digits.
    private static func digits(_ n: Int, _ width: Int) -> String {
        let text = String(n)
        return String(repeating: "0", count: max(0, width - text.count)) + text
    }
}
