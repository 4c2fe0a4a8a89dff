/// A value `JSONLine` can write.
protocol JSONRepresentable { var jsonValue: JSONValue { get } }
extension String: JSONRepresentable { var jsonValue: JSONValue { .string(self) } }
extension Int: JSONRepresentable { var jsonValue: JSONValue { .integer(Int64(self)) } }
extension Int64: JSONRepresentable { var jsonValue: JSONValue { .integer(self) } }
extension Double: JSONRepresentable { var jsonValue: JSONValue { .number(self) } }
extension Bool: JSONRepresentable { var jsonValue: JSONValue { .boolean(self) } }
