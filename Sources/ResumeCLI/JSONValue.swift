
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
