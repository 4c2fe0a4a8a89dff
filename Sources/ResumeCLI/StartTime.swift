import ArgumentParser
import FoundationEssentials
import Glibc
import UTCCalendar

/// `--start-at TIME`: `HH:MM` (local time, the next such moment) or ISO 8601 (`2026-11-23T06:00`, local
/// time, or with `Z` / `+01:00`).
struct StartTime: ExpressibleByArgument {
    var date: Date

    init?(argument: String) {
        guard let date = Self.parse(argument, now: Date()) else { return nil }
        self.date = date
    }

    static func parse(_ text: String, now: Date) -> Date? {
        let digits = { (s: Substring) -> Int? in s.allSatisfy(\.isNumber) && !s.isEmpty ? Int(s) : nil }
        if text.count <= 5, text.contains(":") {
            let parts = text.split(separator: ":")
            guard parts.count == 2, let h = digits(parts[0]), let m = digits(parts[1]), h < 24, m < 60 else { return nil }
            var t = time_t(now.timeIntervalSince1970)
            var tm = tm()
            localtime_r(&t, &tm)
            tm.tm_hour = Int32(h)
            tm.tm_min = Int32(m)
            tm.tm_sec = 0
            tm.tm_isdst = -1
            var at = Double(mktime(&tm))
            if at <= now.timeIntervalSince1970 { at += 86_400 }
            return Date(timeIntervalSince1970: at)
        }
        // YYYY-MM-DD[T ]HH:MM[:SS][Z|±HH:MM|±HHMM]
        let chars = Array(text)
        guard chars.count >= 16, chars[4] == "-", chars[7] == "-", chars[10] == "T" || chars[10] == " ", chars[13] == ":"
        else { return nil }
        let field = { (a: Int, b: Int) -> Int? in digits(Substring(String(chars[a..<b]))) }
        guard let year = field(0, 4), let month = field(5, 7), let day = field(8, 10), let hour = field(11, 13),
            let minute = field(14, 16), (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60
        else { return nil }
        var rest = chars[16...]
        var second = 0
        if rest.first == ":" {
            guard rest.count >= 3, let s = digits(Substring(String(rest.dropFirst().prefix(2)))), s < 61 else { return nil }
            second = s
            rest = rest.dropFirst(3)
        }
        if rest.first == "." { rest = rest.dropFirst().drop(while: \.isNumber) }
        if rest.isEmpty {
            // Local time: the zone's rules are the C library's.
            var tm = tm()
            tm.tm_year = Int32(year - 1900)
            tm.tm_mon = Int32(month - 1)
            tm.tm_mday = Int32(day)
            tm.tm_hour = Int32(hour)
            tm.tm_min = Int32(minute)
            tm.tm_sec = Int32(second)
            tm.tm_isdst = -1
            return Date(timeIntervalSince1970: Double(mktime(&tm)))
        }
        guard let utc = CivilTime(year: year, month: month, day: day, hour: hour, minute: minute, second: second).seconds
        else { return nil }
        var offset = 0
        if rest == ["Z"] || rest == ["z"] {
            offset = 0
        } else {
            guard let sign = rest.first, sign == "+" || sign == "-" else { return nil }
            let zone = String(rest.dropFirst().filter { $0 != ":" })
            guard zone.count == 4, let hh = digits(Substring(zone.prefix(2))), let mm = digits(Substring(zone.suffix(2))) else { return nil }
            offset = (hh * 3600 + mm * 60) * (sign == "-" ? -1 : 1)
        }
        return Date(timeIntervalSince1970: Double(utc - Int64(offset)))
    }
}
