import Crypto
import Glibc
import Synchronization
@testable import ResumeKit

/// An in-memory S3 for ``ScriptedTransport``: CreateMultipartUpload, parts (ETag: their MD5, read from the
/// request's file range), ListParts and Complete. It counts the parts in flight at once; it may cut one part's
/// first attempt, and make each part take a while.
final class MemoryS3: @unchecked Sendable {
    private let state = Mutex((parts: [Int: [UInt8]](), inFlight: 0, most: 0, cut: false))
    private let cutOnce: Int?
    private let partSeconds: Double

    /// - Parameters:
    ///   - cutOnce: the part whose first attempt breaks (connection reset) once its bytes went out.
    ///   - partSeconds: how long each part takes; half of its bytes are reported sent midway.
    init(cutOnce: Int? = nil, partSeconds: Double = 0) {
        self.cutOnce = cutOnce
        self.partSeconds = partSeconds
    }

    /// The most parts that were in flight at once.
    var most: Int { state.withLock { $0.most } }

    func answer(_ call: Call) -> ExchangeResult {
        if call.query == "uploads=" {
            return call.answer(
                200, body: "<InitiateMultipartUploadResult><UploadId>U1</UploadId></InitiateMultipartUploadResult>".utf8
            )
        }
        if call.method == "PUT", let body = call.request.body,
            let number = Int(call.query.split(separator: "&")[0].dropFirst("partNumber=".count))
        {
            let cut = state.withLock { s in
                s.inFlight += 1
                s.most = max(s.most, s.inFlight)
                defer { if number == cutOnce { s.cut = true } }
                return number == cutOnce && !s.cut
            }
            if partSeconds > 0 {
                usleep(useconds_t(partSeconds * 1_000_000))
                call.progress(sent: body.length / 2)
            }
            let bytes = call.body
            state.withLock { s in
                s.inFlight -= 1
                if !cut { s.parts[number] = bytes }
            }
            if cut { return call.fail(.reset) }
            return call.answer(200, [("ETag", "\"\(Insecure.MD5.hash(data: bytes).hex)\"")])
        }
        let parts = state.withLock { $0.parts.sorted { $0.key < $1.key } }
        if call.method == "GET" {
            let listed = parts.map {
                "<Part><PartNumber>\($0.key)</PartNumber><ETag>\"\(Insecure.MD5.hash(data: $0.value).hex)\"</ETag>"
                    + "<Size>\($0.value.count)</Size></Part>"
            }
            return call.answer(
                200, body: "<ListPartsResult><IsTruncated>false</IsTruncated>\(listed.joined())</ListPartsResult>".utf8)
        }
        let md5s = parts.flatMap { Array(Insecure.MD5.hash(data: $0.value)) }
        return call.answer(
            200,
            body: ("<CompleteMultipartUploadResult><ETag>\"\(Insecure.MD5.hash(data: md5s).hex)-\(parts.count)\"</ETag>"
                + "</CompleteMultipartUploadResult>").utf8)
    }
}
