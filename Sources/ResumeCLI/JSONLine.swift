import FoundationEssentials

/// One line of `--json` output: an object with sorted keys, `null` for a missing value.
enum JSONLine {
    static func encode(_ object: [String: (any JSONRepresentable)?]) -> String {
        let values = object.mapValues { $0?.jsonValue ?? .null }
        guard let data = try? encoder.encode(values) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    private static let encoder: JSONEncoder = {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return e
    }()
}
