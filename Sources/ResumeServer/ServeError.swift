/// Why the server could not start.
public enum ServeError: Error, Equatable, CustomStringConvertible, Sendable {
    /// The folder to serve does not exist.
    case directoryNotFound(path: String)
    /// The path to serve exists but is not a folder.
    case notADirectory(path: String)
    /// Another process already listens on the address.
    case addressInUse(host: String, port: Int)
    /// Any other failure to listen (unknown host, no permission for a low port…).
    case cannotListen(host: String, port: Int, reason: String)

    public var description: String {
        switch self {
        case .directoryNotFound(let path):
            "directory not found: \(path)"
        case .notADirectory(let path):
            "not a directory: \(path)"
        case .addressInUse(let host, let port):
            "cannot listen on \(host):\(port): address already in use"
        case .cannotListen(let host, let port, let reason):
            "cannot listen on \(host):\(port): \(reason)"
        }
    }
}
