/// Keeps a response's head and its body, up to a limit: for answers that are small documents (S3's XML,
/// a server's error page), never for a transfer's data.
public final class BodyCollector: ExchangeDelegate {
    public var head: ResponseHead?
    public var body: [UInt8] = []
    /// A body beyond this many bytes ends the exchange: it is not the document asked for.
    private let limit: Int

    public init(limit: Int = 8 << 20) {
        self.limit = limit
    }

    public func exchange(head: ResponseHead, effectiveURL: String) -> Bool {
        self.head = head
        return true
    }

    public func exchange(body bytes: UnsafeRawBufferPointer) -> Bool {
        guard body.count + bytes.count <= limit else { return false }
        body.append(contentsOf: bytes)
        return true
    }
}
