#if canImport(Glibc)
    import Glibc
#endif

/// An IMF-fixdate (RFC 9110 §5.6.7) for `Date` and `Last-Modified`. `strftime` in the C locale, because
/// Swift programs never call `setlocale` and `DateFormatter` is not `Sendable`.
func httpDate(secondsSince1970 seconds: Int) -> String {
    var time = time_t(seconds)
    var parts = tm()
    gmtime_r(&time, &parts)
    var buffer = [CChar](repeating: 0, count: 64)
    let count = strftime(&buffer, buffer.count, "%a, %d %b %Y %H:%M:%S GMT", &parts)
    return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// `httpDate` for the current time.
func httpDateNow() -> String {
    httpDate(secondsSince1970: Int(time(nil)))
}
