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
        guard case .bool(let b)? = item(value) else { return nil }
        return b
    }

    public static func integer(_ value: String?) -> Int64? {
        guard case .integer(let i)? = item(value) else { return nil }
        return i
    }

    /// The integer members of a dictionary field, such as `Upload-Limit`.
    public static func integerDictionary(_ value: String?) -> [String: Int64] {
        members(value) { if case .integer(let i) = $0 { i } else { nil } }
    }

    /// The byte-sequence members of a dictionary field, such as `Repr-Digest`, decoded from base64.
    public static func byteSequenceDictionary(_ value: String?) -> [String: [UInt8]] {
        members(value) { item in
            if case .undecodedByteSequence(let b64) = item { Data(base64Encoded: b64).map { Array($0) } } else { nil }
        }
    }

    public static func serialize(_ value: Bool) -> String { value ? "?1" : "?0" }

    private static func item(_ value: String?) -> RFC9651BareItem? {
        guard let value else { return nil }
        var parser = StructuredFieldValueParser(Array(value.utf8))
        return (try? parser.parseItemFieldValue())?.rfc9651BareItem
    }

    /// The members of a dictionary field that are items `read` takes.
    private static func members<T>(_ value: String?, _ read: (RFC9651BareItem) -> T?) -> [String: T] {
        guard let value else { return [:] }
        var parser = StructuredFieldValueParser(Array(value.utf8))
        guard let map = try? parser.parseDictionaryFieldValue() else { return [:] }
        var result: [String: T] = [:]
        for (key, member) in map {
            if case .item(let item) = member, let v = read(item.rfc9651BareItem) { result[key] = v }
        }
        return result
    }
}
