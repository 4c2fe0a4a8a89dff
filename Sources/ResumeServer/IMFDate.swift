import UTCCalendar

/// IMF-fixdate formatting (RFC 9110 §5.6.7), e.g. `Sun, 06 Nov 1994 08:49:37 GMT`.
///
/// By hand on the shared calendar rather than `strftime`: it must not depend on the process locale,
/// and it is the only date format the server ever writes. Written byte by byte into the string's own
/// storage: every answer carries one or two dates, and string interpolation cost 10 % of a small
/// download's instructions (callgrind).
enum IMFDate {
    private static let weekdays = Array("SunMonTueWedThuFriSat".utf8)
    private static let months = Array("JanFebMarAprMayJunJulAugSepOctNovDec".utf8)

    /// Formats seconds since the Unix epoch (UTC).
    static func format(epochSeconds: Int64) -> String {
        let t = CivilTime(epochSeconds)
        guard (0...9999).contains(t.year) else {
            return
                "\(name(weekdays, t.weekday)), \(t.date(separator: "-").suffix(2)) \(name(months, t.month - 1)) "
                + "\(t.year) \(t.time(separator: ":")) GMT"
        }
        return String(unsafeUninitializedCapacity: 29) { out in
            var i = 0
            func put(_ byte: UInt8) {
                out[i] = byte
                i += 1
            }
            func put(_ text: StaticString) {
                for byte in UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount) { put(byte) }
            }
            func put(_ table: [UInt8], _ index: Int) {
                for byte in table[index * 3..<index * 3 + 3] { put(byte) }
            }
            func put(_ number: Int, digits: Int) {
                var divisor = 1
                for _ in 1..<digits { divisor *= 10 }
                while divisor > 0 {
                    put(UInt8(ascii: "0") + UInt8(number / divisor % 10))
                    divisor /= 10
                }
            }
            put(weekdays, t.weekday)
            put(", ")
            put(t.day, digits: 2)
            put(" ")
            put(months, t.month - 1)
            put(" ")
            put(t.year, digits: 4)
            put(" ")
            put(t.hour, digits: 2)
            put(":")
            put(t.minute, digits: 2)
            put(":")
            put(t.second, digits: 2)
            put(" GMT")
            return i
        }
    }

    private static func name(_ table: [UInt8], _ index: Int) -> String {
        String(decoding: table[index * 3..<index * 3 + 3], as: UTF8.self)
    }
}

/// The last date a connection formatted, and its text: answers within the same second share it.
struct IMFDateCache {
    private var seconds = Int64.min
    private var text = ""

    mutating func format(epochSeconds: Int64) -> String {
        if epochSeconds != seconds {
            seconds = epochSeconds
            text = IMFDate.format(epochSeconds: epochSeconds)
        }
        return text
    }
}
