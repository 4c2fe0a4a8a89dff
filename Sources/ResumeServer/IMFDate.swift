import UTCCalendar

/// IMF-fixdate formatting (RFC 9110 §5.6.7), e.g. `Sun, 06 Nov 1994 08:49:37 GMT`.
///
/// By hand on the shared calendar rather than `strftime`: it must not depend on the process locale,
/// and it is the only date format the server ever writes.
enum IMFDate {
    private static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// Formats seconds since the Unix epoch (UTC).
    static func format(epochSeconds: Int64) -> String {
        let t = CivilTime(epochSeconds)
        return "\(weekdays[t.weekday]), \(t.date(separator: "-").suffix(2)) \(months[t.month - 1]) \(t.year) \(t.time(separator: ":")) GMT"
    }
}
