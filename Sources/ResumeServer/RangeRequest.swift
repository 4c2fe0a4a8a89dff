/// How a GET is answered, decided from its `Range` and `If-Range` fields (RFC 9110 §13.1.5, §14).
///
/// Pure: the caller supplies the file's length and validators, so every rule is unit-testable.
enum RangeDecision: Equatable, Sendable {
    /// 200 with the whole representation.
    case full
    /// 206 with the bytes `first...last` (inclusive, as in `Content-Range`).
    case partial(first: Int64, last: Int64)
    /// 416 with `Content-Range: bytes */length`.
    case unsatisfiable
}

enum RangeRequest {
    /// Decides the answer to a GET.
    ///
    /// - Parameters:
    ///   - range: the `Range` field value, if any.
    ///   - ifRange: the `If-Range` field value, if any.
    ///   - length: the file's size in bytes.
    ///   - etag: the file's current strong entity tag, quotes included.
    ///   - lastModified: the file's `Last-Modified` value exactly as the server sends it.
    ///   - lastModifiedIsStrong: whether that date may validate (RFC 9110 §8.8.2.2: the file has not
    ///     changed within the second it names).
    static func decide(
        range: String?,
        ifRange: String?,
        length: Int64,
        etag: String,
        lastModified: String,
        lastModifiedIsStrong: Bool
    ) -> RangeDecision {
        guard let range else { return .full }
        if let ifRange,
            !ifRangeMatches(ifRange, etag: etag, lastModified: lastModified, lastModifiedIsStrong: lastModifiedIsStrong)
        {
            return .full
        }
        return resolve(range, length: length)
    }

    /// Whether an `If-Range` condition holds: strong comparison for entity tags, exact match for dates.
    static func ifRangeMatches(
        _ value: String,
        etag: String,
        lastModified: String,
        lastModifiedIsStrong: Bool
    ) -> Bool {
        let value = trimmed(value)
        if value.hasPrefix("\"") {
            return value == etag
        }
        if value.hasPrefix("W/") {
            // A weak tag never matches in a strong comparison.
            return false
        }
        return lastModifiedIsStrong && value == lastModified
    }

    /// Applies a `Range` value to a representation of `length` bytes, without `If-Range`.
    ///
    /// Anything this server does not serve as a single part (another unit, a malformed value, several
    /// ranges) is answered in full, which RFC 9110 §14.2 allows.
    static func resolve(_ value: String, length: Int64) -> RangeDecision {
        let value = trimmed(value)
        guard let equals = value.firstIndex(of: "="),
            trimmed(String(value[..<equals])).lowercased() == "bytes"
        else { return .full }
        let specs = value[value.index(after: equals)...]
            .split(separator: ",", omittingEmptySubsequences: false)
            .map { trimmed(String($0)) }
            .filter { !$0.isEmpty }
        guard specs.count == 1, let spec = ByteRangeSpec(specs[0]) else { return .full }
        return spec.resolve(length: length)
    }

    private static func trimmed(_ s: String) -> String {
        var view = Substring(s)
        while let first = view.first, first == " " || first == "\t" { view.removeFirst() }
        while let last = view.last, last == " " || last == "\t" { view.removeLast() }
        return String(view)
    }
}

/// One `range-spec` of the `bytes` unit: `first-last`, `first-` or `-suffix`.
struct ByteRangeSpec: Equatable, Sendable {
    enum Kind: Equatable, Sendable {
        case from(first: Int64, last: Int64?)
        case suffix(length: Int64)
    }

    let kind: Kind

    /// Parses a range-spec; `nil` when it is not valid syntax (then the whole field is ignored).
    init?(_ text: String) {
        guard let dash = text.firstIndex(of: "-") else { return nil }
        let firstText = text[..<dash]
        let lastText = text[text.index(after: dash)...]
        if firstText.isEmpty {
            guard let suffix = Self.number(lastText) else { return nil }
            self.kind = .suffix(length: suffix)
            return
        }
        guard let first = Self.number(firstText) else { return nil }
        if lastText.isEmpty {
            self.kind = .from(first: first, last: nil)
            return
        }
        guard let last = Self.number(lastText), last >= first else { return nil }
        self.kind = .from(first: first, last: last)
    }

    func resolve(length: Int64) -> RangeDecision {
        switch kind {
        case .from(let first, let last):
            guard first < length else { return .unsatisfiable }
            return .partial(first: first, last: min(last ?? (length - 1), length - 1))
        case .suffix(let suffix):
            guard suffix > 0 else { return .unsatisfiable }
            // An empty file has no byte to address; its only sensible answer is the (empty) whole.
            guard length > 0 else { return .full }
            return .partial(first: max(0, length - suffix), last: length - 1)
        }
    }

    /// Parses `1*DIGIT`, saturating at `Int64.max`: a position beyond any real file still compares right.
    private static func number(_ text: Substring) -> Int64? {
        guard !text.isEmpty else { return nil }
        var value: Int64 = 0
        for byte in text.utf8 {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(Int64(byte - UInt8(ascii: "0")))
            value = (overflow1 || overflow2) ? Int64.max : sum
        }
        return value
    }
}
