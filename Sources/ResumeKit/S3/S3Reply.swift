/// What one S3 request came to.
enum S3Reply {
    case ok(ResponseHead, [UInt8])
    /// A final answer other than 2xx, with S3's `<Error>` when the body held one.
    case refused(status: Int, error: S3ErrorBody?, retryAfter: String?)
    /// No answer: the connection failed, stalled, or cannot work at all (TLS, a bad URL).
    case lost(Fault)
    case stopped
}
