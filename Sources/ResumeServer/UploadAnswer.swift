/// An answer of an upload protocol as a value, so that ``DraftMachine`` and ``TusMachine`` stay pure
/// and their tests compare answers instead of reading a socket; the handlers put it on the wire.
struct UploadAnswer: Equatable, Sendable {
    struct Field: Equatable, Sendable {
        var name: String
        var value: String
        init(_ name: String, _ value: String) {
            self.name = name
            self.value = value
        }
    }

    var status: Int
    var fields: [Field]

    init(status: Int, fields: [Field]) {
        self.status = status
        self.fields = fields
    }

    /// The first field of that name (case-insensitive), as a client would read it.
    subscript(_ name: String) -> String? {
        let wanted = name.lowercased()
        return fields.first { $0.name.lowercased() == wanted }?.value
    }

    var pairs: [(String, String)] { fields.map { ($0.name, $0.value) } }
}
