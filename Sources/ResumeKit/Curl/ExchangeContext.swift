import CCurl
import Glibc

/// The Swift side of libcurl's callbacks for one exchange. This file is the only place that crosses
/// the C boundary with `Unmanaged`: the handle's callback data points at an `ExchangeContext`, which
/// `CurlTransport.perform` keeps alive (`withExtendedLifetime`) for as long as the transfer runs.
final class ExchangeContext {
    let delegate: any ExchangeDelegate
    let cancellation: Cancellation
    let followRedirects: Bool
    let body: RequestBody?
    weak var handle: EasyHandle?

    var parser = ResponseHeadParser()
    /// The head handed to the delegate: what follows is its body.
    var finalHead: ResponseHead?
    /// The redirect this exchange answered with, when the request follows redirects.
    private(set) var redirect: ResponseHead?
    var abortedByDelegate = false
    var cancelled = false
    var readFailure: Int32 = 0
    var bodySent: Int64 = 0
    /// A response line or header of this exchange arrived (a redirect or an auth round among them).
    private(set) var responseBegan = false
    /// Times libcurl moved the body back to send it again.
    private(set) var rewinds = 0
    /// The body's length so far: a growing body's grows as the delegate allows.
    private var bodyLength: Int64
    /// `--stall-timeout`: seconds in which no byte moved either way end the exchange (0: never).
    let stallSeconds: Double
    private var moved: (count: Int64, at: Double) = (-1, 0)
    /// The exchange ended because nothing moved for `stallSeconds`.
    private(set) var stalled = false

    init(
        delegate: any ExchangeDelegate, cancellation: Cancellation, followRedirects: Bool, body: RequestBody?,
        stallSeconds: Int
    ) {
        self.stallSeconds = Double(stallSeconds)
        self.delegate = delegate
        self.cancellation = cancellation
        self.followRedirects = followRedirects
        self.body = body
        bodyLength = body?.length ?? 0
    }

    static func from(_ userdata: UnsafeMutableRawPointer?) -> ExchangeContext? {
        guard let userdata else { return nil }
        return Unmanaged<ExchangeContext>.fromOpaque(userdata).takeUnretainedValue()
    }

    /// Installs the callbacks on `handle`, pointing them at this context (unretained).
    func install(on handle: EasyHandle) throws {
        self.handle = handle
        let me = Unmanaged.passUnretained(self).toOpaque()
        try rctl_setopt_data_cb(handle.raw, CURLOPT_HEADERFUNCTION) { ptr, size, count, userdata in
            guard let ctx = ExchangeContext.from(userdata) else { return 0 }
            return ctx.header(UnsafeRawBufferPointer(start: ptr, count: size * count)) ? size * count : 0
        }.check()
        try handle.set(CURLOPT_HEADERDATA, pointer: me)
        try rctl_setopt_data_cb(handle.raw, CURLOPT_WRITEFUNCTION) { ptr, size, count, userdata in
            guard let ctx = ExchangeContext.from(userdata) else { return 0 }
            return ctx.write(UnsafeRawBufferPointer(start: ptr, count: size * count)) ? size * count : 0
        }.check()
        try handle.set(CURLOPT_WRITEDATA, pointer: me)
        try rctl_setopt_xferinfo_cb(handle.raw, CURLOPT_XFERINFOFUNCTION) { userdata, _, dlnow, _, ulnow in
            guard let ctx = ExchangeContext.from(userdata) else { return 1 }
            return ctx.progress(received: Int64(dlnow), sent: Int64(ulnow)) ? 0 : 1
        }.check()
        try handle.set(CURLOPT_XFERINFODATA, pointer: me)
        try handle.set(CURLOPT_NOPROGRESS, 0)
        if body != nil {
            try rctl_setopt_data_cb(handle.raw, CURLOPT_READFUNCTION) { ptr, size, count, userdata in
                guard let ctx = ExchangeContext.from(userdata) else { return Int(CURL_READFUNC_ABORT) }
                return ctx.read(into: UnsafeMutableRawBufferPointer(start: ptr, count: size * count))
            }.check()
            try handle.set(CURLOPT_READDATA, pointer: me)
            // libcurl rewinds the body to send the request again: for an auth round the server asked for, and
            // on a new connection when a reused one died before any answer. See rewind(to:).
            try rctl_setopt_seek_cb(handle.raw, CURLOPT_SEEKFUNCTION) { userdata, offset, origin in
                guard let ctx = ExchangeContext.from(userdata), origin == SEEK_SET else { return CURL_SEEKFUNC_FAIL }
                return ctx.rewind(to: Int64(offset)) ? CURL_SEEKFUNC_OK : CURL_SEEKFUNC_CANTSEEK
            }.check()
            try handle.set(CURLOPT_SEEKDATA, pointer: me)
        }
    }

    func header(_ bytes: UnsafeRawBufferPointer) -> Bool {
        responseBegan = true
        guard let head = parser.feed(bytes: bytes) else { return true }
        if head.isInformational {
            if head.status != 100 { delegate.exchange(informational: head) }
            return true
        }
        if followRedirects, head.isRedirect, head.headers["Location"] != nil {
            redirect = head  // CurlSession follows it; the next exchange's head is the one that counts
            return true
        }
        finalHead = head
        return going(delegate.exchange(head: head, effectiveURL: handle?.info(string: CURLINFO_EFFECTIVE_URL) ?? ""))
    }

    private func write(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard finalHead != nil else { return true }  // body of a response we skipped
        return going(delegate.exchange(body: bytes))
    }

    /// The delegate's answer: false ends the exchange.
    private func going(_ answer: Bool) -> Bool {
        if !answer { abortedByDelegate = true }
        return answer
    }

    private func progress(received: Int64, sent: Int64) -> Bool {
        if cancellation.isStopped {
            cancelled = true
            return false
        }
        // libcurl's own low-speed check averages over its last 5 s, so after a burst (a body that fit in the
        // socket buffers) it notices a stall seconds late; this counts from the last byte that moved.
        let now = Monotonic.now
        if received + sent != moved.count {
            moved = (received + sent, now)
        } else if stallSeconds > 0, now - moved.at >= stallSeconds {
            stalled = true
            return false
        }
        // A stream's count is what was read from it: libcurl's would include the chunked framing.
        return going(delegate.exchange(progressReceived: received, sent: body?.lengthUnknown == true ? bodySent : sent))
    }

    /// Moves the body back to `offset` (from its start) for libcurl to send it again; a pipe cannot go back.
    /// Once body bytes went out and no answer began, the request is not sent again blind: a connection that
    /// died under a body may have delivered part of it, and an upload continues only after a fresh look at
    /// the server's offset (a PATCH sent again at a stale offset is a 409, on which NIOResumableUpload
    /// deletes the upload). libcurl then fails with CURLE_SEND_FAIL_REWIND, a transient fault the next
    /// attempt meets on a new connection, after its HEAD.
    func rewind(to offset: Int64) -> Bool {
        guard let body, !body.isStream, offset >= 0, offset <= bodySent else { return false }
        guard bodySent == 0 || responseBegan else { return false }
        bodySent = offset
        rewinds += 1
        return true
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        guard let body else { return 0 }
        if cancellation.isStopped {
            cancelled = true
            return Int(CURL_READFUNC_ABORT)
        }
        if body.isStream {
            let n = uninterrupted { Glibc.read(body.fileDescriptor, buffer.baseAddress, buffer.count) }
            if n < 0 {
                readFailure = errno
                return Int(CURL_READFUNC_ABORT)
            }
            bodySent += Int64(n)
            // the whole count, before the answer
            if n == 0 { _ = delegate.exchange(progressReceived: 0, sent: bodySent) }
            return n  // 0: the stream ended, and so does the body
        }
        if body.grows, bodySent >= bodyLength {
            guard let length = delegate.exchange(bodyEndedAt: bodySent), length > bodySent else { return 0 }
            bodyLength = length
        }
        let remaining = bodyLength - bodySent
        let want = Int(min(Int64(buffer.count), remaining))
        if want <= 0 { return 0 }
        if let bytes = body.bytes {
            let start = Int(bodySent)
            bytes.withUnsafeBytes {
                buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[start..<start + want]))
            }
            bodySent += Int64(want)
            return want
        }
        let n = uninterrupted { pread(body.fileDescriptor, buffer.baseAddress, want, off_t(body.offset + bodySent)) }
        if n <= 0 {
            // A short source (truncated meanwhile) must not be padded with anything.
            readFailure = n < 0 ? errno : EIO
            return Int(CURL_READFUNC_ABORT)
        }
        bodySent += Int64(n)
        return n
    }
}
