/// What a resume may send in `If-Range`: a strong entity tag, else a strong `Last-Modified` date.
public enum RangeValidator: Sendable, Equatable {
    case entityTag(EntityTag)
    case lastModified(String)

    public var headerValue: String {
        switch self {
        case .entityTag(let tag): tag.rawValue
        case .lastModified(let date): date
        }
    }

    /// Picks the validator RFC 9110 §13.1.5 allows: never a weak tag, and a date only when the response had no
    /// entity tag and the date is strong (§8.8.2.2: `Date` at least one second after `Last-Modified`).
    public static func select(etag: String?, lastModified: String?, date: String?) -> RangeValidator? {
        if let raw = etag {
            guard let tag = EntityTag(raw), !tag.isWeak else { return nil }
            return .entityTag(tag)
        }
        guard let lm = lastModified, let modified = HTTPDate.parse(lm) else { return nil }
        guard let d = date, let served = HTTPDate.parse(d), served - modified >= 1 else { return nil }
        return .lastModified(lm)
    }
}
