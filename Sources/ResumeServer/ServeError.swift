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
    /// A file named on the command line (certificate, key, htpasswd) cannot be read.
    case unreadableFile(path: String, reason: String)
    /// The certificate or key is not usable (not PEM, or the key does not match the certificate).
    case badTLS(reason: String)
    /// A line of the htpasswd file is in a format this server does not check.
    case badPasswordFile(path: String, line: Int, reason: String)
    /// The folder of unfinished uploads cannot be created (a read-only folder needs `--read-only`).
    case uploadStoreUnavailable(path: String, reason: String)
    /// `--store` names no usable S3 prefix (a malformed URL, no credentials).
    case badStore(reason: String)
    /// The S3 endpoint lets a second `If-None-Match: *` write through: instances could not lock uploads.
    case noConditionalWrites(store: String)
    /// The S3 prefix cannot be written (a wrong endpoint or key, a missing bucket).
    case storeUnreachable(store: String, reason: String)

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
        case .unreadableFile(let path, let reason):
            "cannot read \(path): \(reason)"
        case .badTLS(let reason):
            "cannot use the TLS certificate and key: \(reason)"
        case .badPasswordFile(let path, let line, let reason):
            "\(path) line \(line): \(reason)"
        case .uploadStoreUnavailable(let path, let reason):
            "cannot keep uploads in \(path): \(reason) (serve with --read-only to take none)"
        case .badStore(let reason):
            "--store: \(reason)"
        case .storeUnreachable(let store, let reason):
            "cannot keep uploads in \(store): \(reason)"
        case .noConditionalWrites(let store):
            "\(store) ignores conditional writes (If-None-Match: *), on which the locks between instances rest: use an "
                + "endpoint that supports them, or --single-instance if this is the only instance"
        }
    }

    /// The exit status `resumectl serve` ends with (the contract's table: 64 usage, 66 input
    /// missing, 73 cannot create the listener).
    public var exitStatus: Int32 {
        switch self {
        case .directoryNotFound, .notADirectory, .unreadableFile: 66
        case .badTLS, .badPasswordFile, .badStore, .noConditionalWrites: 64
        case .addressInUse, .cannotListen, .uploadStoreUnavailable, .storeUnreachable: 73
        }
    }
}
