import FoundationEssentials
import UTCCalendar

/// The times of tokens, result records and live status: ISO 8601 in UTC, whole seconds (`2026-11-25T08:16:00Z`),
/// as Foundation's `.iso8601` strategy wrote them. By hand: Foundation's ISO 8601 style maps its Calendar code
/// (a few hundred KiB) into every transfer that saves a token.
public enum ISOTime {
    /// The time in that form, in whole seconds (a fraction is dropped).
    public static func string(_ date: Date) -> String {
        let t = CivilTime(Int64(date.timeIntervalSince1970.rounded(.down)))
        return t.date(separator: "-") + "T" + t.time(separator: ":") + "Z"
    }

    /// The time of exactly that form, else nil: what loads is what a write keeps.
    static func date(_ text: String) -> Date? {
        let b = Array(text.utf8)
        guard b.count == 20, b[4] == UInt8(ascii: "-"), b[7] == UInt8(ascii: "-"), b[10] == UInt8(ascii: "T"),
            b[13] == UInt8(ascii: ":"), b[16] == UInt8(ascii: ":"), b[19] == UInt8(ascii: "Z")
        else { return nil }
        func number(_ at: Int, _ count: Int) -> Int? {
            var n = 0
            for c in b[at..<at + count] {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(c) else { return nil }
                n = n * 10 + Int(c - UInt8(ascii: "0"))
            }
            return n
        }
        guard let year = number(0, 4), let month = number(5, 2), let day = number(8, 2), let hour = number(11, 2),
            let minute = number(14, 2), let second = number(17, 2),
            let seconds = CivilTime(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
                .seconds
        else { return nil }
        return Date(timeIntervalSince1970: Double(seconds))
    }

    static let encoding = JSONEncoder.DateEncodingStrategy.custom { date, encoder in
        var c = encoder.singleValueContainer()
        try c.encode(string(date))
    }

    static let decoding = JSONDecoder.DateDecodingStrategy.custom { decoder in
        let c = try decoder.singleValueContainer()
        let text = try c.decode(String.self)
        guard let date = date(text) else {
            throw DecodingError.dataCorruptedError(
                in: c, debugDescription: "\(text) is no time of the form 2026-11-25T08:16:00Z")
        }
        return date
    }
}
