/// HTTP dates (RFC 9110 §5.6.7), enough to compare `Date` with `Last-Modified` and to read `Retry-After`.
/// Parsed by hand: Foundation's DateFormatter would load ICU (megabytes of memory) for three formats.
enum HTTPDate {
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// Seconds since 1970, or nil when the text is no HTTP date. Accepts IMF-fixdate
    /// (`Sun, 06 Nov 1994 08:49:37 GMT`), RFC 850 (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime
    /// (`Sun Nov  6 08:49:37 1994`).
    static func parse(_ text: String) -> Int64? {
        let w = text.split(whereSeparator: { $0 == " " || $0 == "," })
        switch w.count {
        case 6 where w[5] == "GMT":
            guard let d = Int(w[1]), let m = month(w[2]), let y = Int(w[3]) else { return nil }
            return seconds(year: y, month: m, day: d, time: w[4])
        case 4 where w[3] == "GMT":
            let dmy = w[1].split(separator: "-")
            guard dmy.count == 3, let d = Int(dmy[0]), let m = month(dmy[1]), let yy = Int(dmy[2]) else { return nil }
            let y = yy >= 100 ? yy : (yy < 70 ? 2000 + yy : 1900 + yy)
            return seconds(year: y, month: m, day: d, time: w[2])
        case 5:
            guard let m = month(w[1]), let d = Int(w[2]), let y = Int(w[4]) else { return nil }
            return seconds(year: y, month: m, day: d, time: w[3])
        default:
            return nil
        }
    }

    private static func month(_ name: Substring) -> Int? {
        months.firstIndex(of: name.lowercased()).map { $0 + 1 }
    }

    private static func seconds(year: Int, month: Int, day: Int, time: Substring) -> Int64? {
        let hms = time.split(separator: ":").compactMap { Int($0) }
        guard hms.count == 3 else { return nil }
        return CivilTime(year: year, month: month, day: day, hour: hms[0], minute: hms[1], second: hms[2]).seconds
    }
}

/// A UTC date and time of the proleptic Gregorian calendar, to and from seconds since 1970, with the
/// "days from civil" algorithms (HTTP dates, SigV4's timestamps, the state folder's ISO 8601 times).
struct CivilTime: Equatable {
    var year, month, day, hour, minute, second: Int

    init(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int) {
        (self.year, self.month, self.day, self.hour, self.minute, self.second) = (year, month, day, hour, minute, second)
    }

    init(_ seconds: Int64) {
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
    var seconds: Int64? {
        guard (1...12).contains(month), (1...31).contains(day), (0...23).contains(hour), (0...59).contains(minute),
            (0...60).contains(second), (1970...9999).contains(year)  // four digits: a longer year overflowed the seconds
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
    func date(separator: String) -> String {
        [Self.digits(year, 4), Self.digits(month, 2), Self.digits(day, 2)].joined(separator: separator)
    }

    /// `hh`, `mm`, `ss` joined by `separator`.
    func time(separator: String) -> String {
        [Self.digits(hour, 2), Self.digits(minute, 2), Self.digits(second, 2)].joined(separator: separator)
    }

    /// Zero-padded to `width` digits.
    private static func digits(_ n: Int, _ width: Int) -> String {
        let text = String(n)
        return String(repeating: "0", count: max(0, width - text.count)) + text
    }
}
