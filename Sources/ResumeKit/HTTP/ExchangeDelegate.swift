/// Receives what one exchange produces. Called on the thread that runs the exchange.
public protocol ExchangeDelegate: AnyObject {
    /// An informational (1xx) response, such as the draft's `104 Upload Resumption Supported`.
    func exchange(informational head: ResponseHead)
    /// The final response head, after any followed redirects. Return false to abort: the body is unwanted.
    func exchange(head: ResponseHead, effectiveURL: String) -> Bool
    /// A piece of the response body. Return false to abort (a local write failed).
    func exchange(body: UnsafeRawBufferPointer) -> Bool
    /// Periodic progress with byte counts of this exchange. Return false to abort.
    func exchange(progressReceived received: Int64, sent: Int64) -> Bool
    /// A growing body (``RequestBody/grows``) sent its `length` bytes: the new length, or nil to end it there.
    /// May block until more is ready.
    func exchange(bodyEndedAt length: Int64) -> Int64?
}

extension ExchangeDelegate {
    public func exchange(informational head: ResponseHead) {}
    public func exchange(body: UnsafeRawBufferPointer) -> Bool { true }
    public func exchange(progressReceived received: Int64, sent: Int64) -> Bool { true }
    public func exchange(bodyEndedAt length: Int64) -> Int64? { nil }
}
