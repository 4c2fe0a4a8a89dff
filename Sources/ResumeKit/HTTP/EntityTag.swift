/// An entity tag as sent in `ETag` (RFC 9110 §8.8.3).
public struct EntityTag: Sendable, Equatable {
    /// The tag exactly as received, quotes and any `W/` prefix included.
    public var rawValue: String

    public init?(_ header: String) {
        let v = header.trimmingSpaces()
        let opaque = v.hasPrefix("W/") ? v.dropFirst(2) : Substring(v)
        guard opaque.count >= 2, opaque.first == "\"", opaque.last == "\"" else { return nil }
        rawValue = v
    }

    public var isWeak: Bool { rawValue.hasPrefix("W/") }

    /// Strong comparison: both strong and character-for-character equal.
    public func stronglyMatches(_ other: EntityTag) -> Bool {
        !isWeak && !other.isWeak && rawValue == other.rawValue
    }
}
