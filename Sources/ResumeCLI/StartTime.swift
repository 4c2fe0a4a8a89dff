import ArgumentParser
import FoundationEssentials
import Glibc
import UTCCalendar

/// `--start-at TIME`: `HH:MM` (local time, the next such moment) or ISO 8601 (`YYYY-MM-DD[T ]HH:MM[:SS][.fraction]`,
/// local time, or with `Z` / `+01:00` / `+0100`).
struct StartTime: ExpressibleByArgument {
    var date: Date

    init?(argument: String) {
        guard let date = Self.parse(argument, now: Date()) else { return nil }
        self.date = date
    }

    static func parse(_ text: String, now: Date) -> Date? {
        if text.count <= 5, let hm = text.wholeMatch(of: /(\d+):(\d+)/.asciiOnlyDigits()) {
            guard let h = Int(hm.1), let m = Int(hm.2), h < 24, m < 60 else { return nil }
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
        let iso = /(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d)(?::(\d\d))?(?:\.\d*)?([Zz]|[+-]\d\d:?\d\d)?/.asciiOnlyDigits()
        guard let f = text.wholeMatch(of: iso), let year = Int(f.1), let month = Int(f.2), let day = Int(f.3),
            let hour = Int(f.4),
            let minute = Int(f.5), let second = Int(f.6 ?? "0"), (1...12).contains(month), (1...31).contains(day),
            hour < 24, minute < 60,
            second < 61
        else { return nil }
        guard let zone = f.7 else {
            // Local time: the zone's rules are the C library's.
            var tm = tm(
                tm_sec: Int32(second), tm_min: Int32(minute), tm_hour: Int32(hour), tm_mday: Int32(day),
                tm_mon: Int32(month - 1),
                tm_year: Int32(year - 1900), tm_wday: 0, tm_yday: 0, tm_isdst: -1, tm_gmtoff: 0, tm_zone: nil)
            return Date(timeIntervalSince1970: Double(mktime(&tm)))
        }
        guard
            let utc = CivilTime(year: year, month: month, day: day, hour: hour, minute: minute, second: second).seconds
        else { return nil }
        let hhmm = zone.filter(\.isNumber)  // empty for Z
        let offset =
            hhmm.isEmpty ? 0 : (Int(hhmm.prefix(2))! * 3600 + Int(hhmm.suffix(2))! * 60) * (zone.first == "-" ? -1 : 1)
        return Date(timeIntervalSince1970: Double(utc - Int64(offset)))
    }
}
