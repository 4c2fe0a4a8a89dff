import UTCCalendar

/// The two time formats SigV4 uses, worked out by hand (no DateFormatter, which would load ICU).
struct AWSTimestamp: Equatable {
    /// `YYYYMMDD`
    let date: String
    /// `YYYYMMDDTHHMMSSZ`
    let dateTime: String

    init(_ seconds: Int64) {
        let t = CivilTime(seconds)
        date = t.date(separator: "")
        dateTime = date + "T" + t.time(separator: "") + "Z"
    }
}
