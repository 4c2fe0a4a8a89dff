@testable import ResumeKit

/// A response head with `fields` in order, as the state machines' tests script them.
func head(_ status: Int, _ fields: [(String, String)] = []) -> ResponseHead {
    ResponseHead(status: status, headers: HeaderFields(fields.map { .init(name: $0.0, value: $0.1) }))
}
