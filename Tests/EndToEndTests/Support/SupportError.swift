/// The one error type of the test support: a sentence saying what went wrong.
public struct SupportError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
