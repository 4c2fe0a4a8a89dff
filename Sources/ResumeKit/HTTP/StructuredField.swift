import FoundationEssentials
import RawStructuredFieldValues

/// Structured field values (RFC 9651) read from response headers through swift-http-structured-headers.
/// A value that does not parse is treated as absent, as the upload draft requires.
///
/// Always `rfc9651BareItem`: the deprecated `bareItem` converts with `try!` and trapped on a Date (`@1`)
/// or Display String (`%"x"`), which RFC 9651 parsers accept — a server could crash the client with one
/// header (found by FuzzStructuredFields).
public enum StructuredField {
    public static func boolean(_ value: String?) -> Bool? {
        guard case .bool(let b)? = item(value)?.rfc9651BareItem else { return nil }
        return b
    }

    public static func integer(_ value: String?) -> Int64? {
        guard case .integer(let i)? = item(value)?.rfc9651BareItem else { return nil }
        return i
    }

    /// The integer members of a dictionary field, such as `Upload-Limit`.
    public static func integerDictionary(_ value: String?) -> [String: Int64] {
        guard let value, let map = try? dictionary(value) else { return [:] }
        var result: [String: Int64] = [:]
        for (key, member) in map {
            if case .item(let item) = member, case .integer(let i) = item.rfc9651BareItem { result[key] = i }
        }
        return result
    }

    /// The byte-sequence members of a dictionary field, such as `Repr-Digest`, decoded from base64.
    public static func byteSequenceDictionary(_ value: String?) -> [String: [UInt8]] {
        guard let value, let map = try? dictionary(value) else { return [:] }
        var result: [String: [UInt8]] = [:]
        for (key, member) in map {
            if case .item(let item) = member, case .undecodedByteSequence(let b64) = item.rfc9651BareItem,
                let data = Data(base64Encoded: b64)
            {
                result[key] = Array(data)
            }
        }
        return result
    }

    public static func serialize(_ value: Bool) -> String { value ? "?1" : "?0" }

    private static func item(_ value: String?) -> Item? {
        guard let value else { return nil }
        var p = parser(value)
        return try? p.parseItemFieldValue()
    }

    private static func dictionary(_ value: String) throws -> OrderedMap<String, ItemOrInnerList> {
        var p = parser(value)
        return try p.parseDictionaryFieldValue()
    }

    private static func parser(_ value: String) -> StructuredFieldValueParser<[UInt8]> {
        StructuredFieldValueParser(Array(value.utf8))
    }
}
