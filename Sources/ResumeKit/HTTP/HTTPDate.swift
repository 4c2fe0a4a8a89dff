import Foundation

/// IMF-fixdate parsing (RFC 9110 §5.6.7), enough to compare `Date` with `Last-Modified`.
enum HTTPDate {
    private static let formats = [
        "EEE, dd MMM yyyy HH:mm:ss zzz",  // IMF-fixdate
        "EEEE, dd-MMM-yy HH:mm:ss zzz",  // RFC 850
        "EEE MMM d HH:mm:ss yyyy",  // asctime
    ]

    /// Seconds since 1970, or nil when the text is no HTTP date.
    static func parse(_ text: String) -> Int64? {
        for format in formats {
            let f = DateFormatter()
            f.locale = Locale(identifier: "en_US_POSIX")
            f.timeZone = TimeZone(identifier: "GMT")
            f.dateFormat = format
            if let date = f.date(from: text.trimmingSpaces()) { return Int64(date.timeIntervalSince1970) }
        }
        return nil
    }
}
