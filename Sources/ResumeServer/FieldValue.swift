/// The one reading of the field values every upload protocol shares.
enum FieldValue {
    /// An integer field (`Content-Length`, `Upload-Offset`, `Upload-Length`): a non-negative decimal of at most
    /// 18 digits (any such fits in an `Int64`); anything else is malformed (`nil`).
    static func integer<S: StringProtocol>(_ value: S?) -> Int64? {
        guard let digits = value?.trimmingSpaces.utf8, !digits.isEmpty, digits.count <= 18,
            digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 })
        else { return nil }
        return digits.reduce(0) { $0 * 10 + Int64($1 - 0x30) }
    }
}

extension StringProtocol {
    /// Without the spaces and tabs around it (RFC 9110 §5.6.3 OWS).
    var trimmingSpaces: String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
