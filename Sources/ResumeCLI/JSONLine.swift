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

enum JSONValue: Encodable {
    case string(String)
    case integer(Int64)
    case number(Double)
    case boolean(Bool)
    case null

    func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .string(let v): try c.encode(v)
        case .integer(let v): try c.encode(v)
        case .number(let v): try c.encode(v)
        case .boolean(let v): try c.encode(v)
        case .null: try c.encodeNil()
        }
    }
}

protocol JSONRepresentable { var jsonValue: JSONValue { get } }
extension String: JSONRepresentable { var jsonValue: JSONValue { .string(self) } }
extension Int: JSONRepresentable { var jsonValue: JSONValue { .integer(Int64(self)) } }
extension Int64: JSONRepresentable { var jsonValue: JSONValue { .integer(self) } }
extension Double: JSONRepresentable { var jsonValue: JSONValue { .number(self) } }
extension Bool: JSONRepresentable { var jsonValue: JSONValue { .boolean(self) } }
