/// A slice of an open file sent as a request body, read with `pread` so memory stays flat; or a few
/// bytes held in memory (an S3 CompleteMultipartUpload document).
public struct RequestBody: Sendable, Equatable {
    public var fileDescriptor: Int32
    public var offset: Int64
    public var length: Int64
    public var bytes: [UInt8]?
    /// The body may go on past `length`: at its end the delegate is asked for more
    /// (``ExchangeDelegate/exchange(bodyEndedAt:)``), and the request goes chunked as its length is unknown.
    public var grows = false

    public init(fileDescriptor: Int32, offset: Int64, length: Int64, grows: Bool = false) {
        self.fileDescriptor = fileDescriptor
        self.offset = offset
        self.length = length
        self.grows = grows
    }

    public init(bytes: [UInt8]) {
        self.fileDescriptor = -1
        self.offset = 0
        self.length = Int64(bytes.count)
        self.bytes = bytes
    }

    /// A body of unknown length: `fileDescriptor` (a pipe) is read with read(2) until its end, and the
    /// request goes chunked (HTTP/1.1) or framed (HTTP/2), as `curl -T -` sends it.
    public static func stream(_ fileDescriptor: Int32) -> RequestBody {
        RequestBody(fileDescriptor: fileDescriptor, offset: 0, length: -1)
    }

    /// Read until the end of its descriptor rather than a known range.
    public var isStream: Bool { length < 0 && bytes == nil }
    /// Sent without a declared length (chunked on HTTP/1.1).
    public var lengthUnknown: Bool { isStream || grows }
}
