import FoundationEssentials

extension UploadOperation {
    /// Sends until the upload is complete (a file's upload, or a stream whose end was read).
    func runToEnd() throws(TransferError) -> UploadResult {
        guard let result = try run() else {
            throw TransferError(.failed, "the upload stopped before its end", tokenID: token.id)
        }
        return result
    }

    /// Bytes the server holds plus those each exchange in flight sent.
    struct Progress {
        var base: Int64 = 0
        var sent: [ObjectIdentifier: Int64] = [:]
        var pacer = ProgressPacer()
    }

    /// One request on its way: what it carries, and what came back.
    final class Flight: ExchangeDelegate, @unchecked Sendable {
        /// The plan, grown with its body while an open stream's append goes on.
        var plan: Machine.Plan
        let request: TransferRequest
        private let checksumField: BodyChecksum?
        private unowned let operation: UploadOperation
        private let total: Int64?
        private var lone = true
        var session: (any TransportSession)?
        /// It took a request of the batch's ``RequestBudget``, given back when it ends.
        var holdsBudget = false
        var result: ExchangeResult?
        var head: ResponseHead?
        var body: [UInt8] = []
        var checksum: [UInt8]?
        var digestError: TransferError?
        /// 1xx heads of an exchange that ran beside others, answered on the operation's thread at its end.
        var informationals: [ResponseHead] = []

        init(_ plan: Machine.Plan, _ planned: UploadExchange, _ operation: UploadOperation) {
            self.plan = plan
            self.operation = operation
            total = operation.total
            checksumField = planned.body == nil ? nil : planned.checksum
            let url = planned.url ?? operation.token.url
            let given = planned.userHeaders ? (try? HeaderLines.parse(operation.token.headers)) ?? [:] : [:]
            var all = Origin.headers(given, for: url, named: operation.token.url)
            for field in planned.headers.fields { all.set(field.name, field.value) }
            let fd = operation.source.fd
            let grows = operation.growth != nil && operation.machine.canGrow(plan)
            request = TransferRequest(
                method: planned.method, url: url, headers: all, followRedirects: false,
                body: planned.body.map {
                    RequestBody(fileDescriptor: fd, offset: $0.offset, length: $0.length, grows: grows)
                }
                    ?? planned.document.map(RequestBody.init(bytes:)))
        }

        /// Computes the body's checksum, then sends; on the calling thread.
        func fly(cancellation: Cancellation) {
            lone = cancellation === operation.cancellation
            var request = self.request
            if let field = checksumField, let body = request.body {
                do throws(TransferError) {
                    let sum = try operation.source.digestBytes(
                        BodyRange(offset: body.offset, length: body.length), field.algorithm)
                    checksum = sum
                    request.headers.set(field.header, field.prefix + Data(sum).base64EncodedString())
                } catch {
                    digestError = error
                    return
                }
            }
            result = session?.perform(
                request, settings: operation.options.transport, cancellation: cancellation, delegate: self)
        }

        func exchange(informational head: ResponseHead) {
            if lone { operation.informational(head, requestURL: request.url) } else { informationals.append(head) }
        }

        func exchange(head: ResponseHead, effectiveURL: String) -> Bool {
            self.head = head
            return true
        }

        func exchange(body bytes: UnsafeRawBufferPointer) -> Bool {
            // Answers a machine reads are small documents (S3's XML); the rest of a larger body is not kept.
            if body.count + bytes.count <= 1 << 20 { body.append(contentsOf: bytes) }
            return true
        }

        func exchange(bodyEndedAt length: Int64) -> Int64? {
            operation.grow(self, sentUpTo: length)
        }

        func exchange(progressReceived received: Int64, sent: Int64) -> Bool {
            if operation.tooLarge != nil { return false }  // the server's limit is known to be too small: stop sending
            guard request.body?.bytes == nil, request.body != nil else { return true }
            let id = ObjectIdentifier(self)
            let (emit, total) = (operation.emit, self.total)
            operation.progress.withLock { progress in
                progress.sent[id] = sent
                let bytes = progress.base + progress.sent.values.reduce(0, +)
                if let rate = progress.pacer.tick(bytes: bytes) {
                    emit(.progress(bytes: bytes, total: total, rate: rate))
                }
            }
            return true
        }
    }
}

/// How an open stream's append goes on (``UploadMachine/canGrow(_:)``): told where the body ends (a stream
/// offset), it waits for more to be durable and gives the new end with the stream's state to record, or nil.
typealias BodyGrowth = (_ sentUpTo: Int64) -> (end: Int64, stream: ResumeToken.StreamState)?
