import UTCCalendar

/// HTTP dates (RFC 9110 §5.6.7), enough to compare `Date` with `Last-Modified` and to read `Retry-After`.
/// Parsed by hand: Foundation's DateFormatter would load ICU (megabytes of memory) for three formats.
enum HTTPDate {
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// Seconds since 1970, or nil: IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), RFC 850
    /// (`Sunday, 06-Nov-94 08:49:37 GMT`) or asctime (`Sun Nov  6 08:49:37 1994`).
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

    /// A time as folder listings print it, to the minute: nginx's `27-Nov-2026 11:37` or Apache's
    /// `2026-11-27 11:37`, read as UTC (nginx's default); nil when `words` start with neither.
    static func listed(_ words: ArraySlice<Substring>) -> Int64? {
        guard words.count >= 2, words[words.startIndex + 1].split(separator: ":").count == 2 else { return nil }
        let day = words[words.startIndex].split(separator: "-")
        let time = words[words.startIndex + 1] + ":00"
        guard day.count == 3 else { return nil }
        if let d = Int(day[0]), let m = month(day[1]), let y = Int(day[2]) {
            return seconds(year: y, month: m, day: d, time: time)
        }
        if let y = Int(day[0]), let m = Int(day[1]), let d = Int(day[2]), (1...12).contains(m) {
            return seconds(year: y, month: m, day: d, time: time)
        }
        return nil
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
