/// A value `JSONLine` can write.
protocol JSONRepresentable: Encodable {}
extension String: JSONRepresentable {}
extension Int: JSONRepresentable {}
extension Int64: JSONRepresentable {}
extension Double: JSONRepresentable {}
extension Bool: JSONRepresentable {}
