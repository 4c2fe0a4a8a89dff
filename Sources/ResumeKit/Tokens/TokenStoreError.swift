/// Errors of the token store, each with the sentence a user should read.
public enum TokenStoreError: Error, Sendable, Equatable, CustomStringConvertible {
    case notFound(String)
    case unreadable(String, reason: String)
    case unsupportedVersion(String, Int)
    case cannotWrite(String, reason: String)
    case cannotCreateFolder(String, reason: String)
    /// JSON that decodes, holding a value this program never writes (see ``TokenValidation``).
    case invalid(String, TokenValidation.Violation)

    public var description: String {
        switch self {
        case .notFound(let t): "no token named '\(t)'"
        case .unreadable(let p, let r): "token \(p) is unreadable: \(r)"
        case .unsupportedVersion(let p, let v):
            "token \(p) has schema version \(v); this resumectl reads version \(ResumeToken.currentVersion)"
        case .cannotWrite(let p, let r): "cannot write token \(p): \(r)"
        case .cannotCreateFolder(let p, let r): "cannot create the state folder \(p): \(r)"
        case .invalid(let p, let v): "token \(p) is malformed: \(v)"
        }
    }
}
