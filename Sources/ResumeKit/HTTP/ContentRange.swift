/// A parsed `Content-Range: bytes first-last/complete` (RFC 9110 §14.4).
public struct ContentRange: Sendable, Equatable {
    /// The byte range carried, nil for the unsatisfied form `bytes */complete`.
    public var range: ClosedRange<Int64>?
    /// The complete length, nil when the server sent `*`.
    public var completeLength: Int64?

    public init(range: ClosedRange<Int64>?, completeLength: Int64?) {
        self.range = range
        self.completeLength = completeLength
    }

    public init?(_ value: String) {
        let v = value.trimmingSpaces()
        guard v.lowercased().hasPrefix("bytes ") else { return nil }
        let spec = v.dropFirst(6).trimmingSpaces()
        guard let slash = spec.firstIndex(of: "/") else { return nil }
        let rangePart = spec[..<slash]
        let lengthPart = spec[spec.index(after: slash)...]
        if lengthPart == "*" {
            completeLength = nil
        } else {
            guard let n = Int64(lengthPart), n >= 0 else { return nil }
            completeLength = n
        }
        if rangePart == "*" {
            guard completeLength != nil else { return nil }
            range = nil
        } else {
            let bounds = rangePart.split(separator: "-", omittingEmptySubsequences: false)
            guard bounds.count == 2, let first = Int64(bounds[0]), let last = Int64(bounds[1]),
                first >= 0, first <= last
            else { return nil }
            if let total = completeLength, last >= total { return nil }
            range = first...last
        }
    }
}
