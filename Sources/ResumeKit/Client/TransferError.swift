/// Why a transfer did not finish, with the exit status the CLI documents for it.
public struct TransferError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: Sendable, Equatable {
        /// Stopped by the user: Ctrl-C (`.interrupt`) or `pause`/SIGTERM (`.pause`). The token is kept.
        case stopped(StopReason)
        /// The network failed more often than `--retries` allows. The token is kept.
        case retriesExhausted
        /// The server refused for good (404, 403 …), or the transport cannot work (TLS, bad URL).
        case failed
        /// The content changed on the server and `--on-change fail` was given.
        case changed
        /// The finished data does not match the expected checksum; the `.part` file is kept.
        case checksumMismatch
        /// A token that cannot be read, is of another schema version, or belongs to the other direction.
        case badToken
        /// What is being sent changed underneath the transfer: an upload's source file since the upload began,
        /// or a file on the server while a download fed a pipe (which cannot be rewound).
        case sourceChanged
        /// A token, or an upload's source file, does not exist.
        case inputMissing
        /// The output cannot be created (folder missing, not writable, a folder in the way).
        case cannotCreateOutput
        /// A local read or write failed (disk full …). The token is kept.
        case localIO
        /// Another process is running this transfer.
        case busy
        /// Bad arguments.
        case usage
        /// The reader of stdout went away (EPIPE): the transfer ends quietly, as a Unix filter does.
        case outputClosed
        /// A folder listing that is none, or past the limits (files, bytes) a folder download takes.
        case badListing
    }

    public var code: Code
    public var message: String
    /// The HTTP status of the server's refusal, when a refusal ended the transfer (401, 404, 413 …).
    public var status: Int?
    /// The token that can continue this transfer, when one is kept; nil when the transfer left none.
    public var tokenID: String?
    /// What went wrong, without what the transfer made of it: for ``Code/changed``, what differs on the server.
    public var cause: String?

    public init(_ code: Code, _ message: String, status: Int? = nil, tokenID: String? = nil) {
        self.code = code
        self.message = message
        self.status = status
        self.tokenID = tokenID
    }

    /// A transfer stopped by `reason`: "interrupted …" or "paused …", then `detail` (where it stopped, what a resume
    /// does).
    public static func stopped(_ reason: StopReason, _ detail: String, tokenID: String?) -> TransferError {
        let what = reason == .interrupt ? "interrupted" : "paused"
        return TransferError(
            .stopped(reason), detail.hasPrefix(";") ? what + detail : "\(what) \(detail)", tokenID: tokenID)
    }

    /// The file changed on the server and `--on-change fail` (or a replacement `--url`) forbids starting over.
    static func changed(_ reason: String, tokenID: String?) -> TransferError {
        var error = TransferError(.changed, "\(reason) (--on-change fail)", tokenID: tokenID)
        error.cause = reason
        return error
    }

    /// A download's server refused for good: "the server answered 404 Not Found for URL".
    static func refused(_ status: Int, _ reason: String, url: String, tokenID: String? = nil) -> TransferError {
        TransferError(
            .failed, "the server answered \(status)\(reason.isEmpty ? "" : " " + reason) for \(url)", status: status,
            tokenID: tokenID)
    }

    public var description: String { message }

    /// True when `resumectl resume` can continue where this stopped.
    public var isResumable: Bool {
        guard tokenID != nil else { return false }
        switch code {
        case .stopped, .retriesExhausted, .localIO, .busy: return true
        default: return false
        }
    }

    /// The exit status of README.md ("Exit status").
    public var exitStatus: Int32 {
        switch code {
        case .stopped(.interrupt): 130
        case .stopped(.pause), .retriesExhausted, .busy: 75
        case .failed, .changed: 1
        case .checksumMismatch, .badToken, .sourceChanged, .badListing: 65
        case .inputMissing: 66
        case .cannotCreateOutput: 73
        case .localIO: 74
        case .usage: 64
        case .outputClosed: 141
        }
    }
}
