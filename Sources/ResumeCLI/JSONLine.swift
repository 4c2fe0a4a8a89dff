import FoundationEssentials

/// One line of `--json` output: an object with sorted keys, `null` for a missing value.
enum JSONLine {
    static func encode(_ object: [String: (any JSONRepresentable)?]) -> String {
        guard let data = try? encoder.encode(object.mapValues(Value.init)) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    private struct Value: Encodable {
        let value: (any JSONRepresentable)?

        func encode(to encoder: any Encoder) throws {
            var c = encoder.singleValueContainer()
            if let value { try c.encode(value) } else { try c.encodeNil() }
        }
    }

    private static let encoder: JSONEncoder = {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return e
    }()
}
