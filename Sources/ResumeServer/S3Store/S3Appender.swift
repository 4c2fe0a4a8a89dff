import NIOCore
import NIOPosix
import ResumeKit

/// Stores one request's body in an upload kept on S3 (``S3Backend``): parts while the body runs, the
/// rest as the tail object at its end.
///
/// Opening takes the upload's lock on S3 (``S3Lock``; a live lock of another instance refuses this
/// request with 423) and reads the upload back under it: the offset S3 holds must be the one the
/// request was admitted at (else 409), and the tail's bytes open the next part. Before each write the
/// lock is renewed when due; a lock lost (another instance took it over) or about to run out stops the
/// request at once with 423, so two writers never interleave. Up to ``partsAtOnce`` parts are sent at once.
///
/// Memory: every byte from its arrival until S3 acknowledges it counts against the server's one
/// ``BodyMemory`` budget (``S3PendingBytes``). A request reads more while the budget has room, up to a
/// part and ``highWater`` waiting; beyond the budget only while it has nothing in flight and less than a
/// part waiting (no other event would wake it), and then a part as small as S3 takes (5 MiB) goes as
/// soon as it is there: so each upload holds about S3's smallest part of its own, and the rest share the
/// budget. A body a checksum
/// must vouch for (a tus append with `Upload-Checksum`) is held whole until it has ended well, parts
/// being final once stored (at most ``vouchedLimit``; a larger one is refused with 413). Lives on one
/// event loop; S3 calls run on the thread pool.
final class S3Appender: UploadSink {
    private static let highWater = 4 << 20
    /// Parts sent to S3 at once, as `aws s3 cp` sends (its default is more).
    private static let partsAtOnce = 4
    static let vouchedLimit = 64 << 20

    private let backend: S3Backend
    private let setup: UploadSinkSetup
    private let start: Int64
    private var lock: S3Lock?
    private var upload: S3UploadRecord?
    /// Every part stored, in any order (one may have failed between two that did not).
    private var parts: [ListedPart] = []
    /// The tail object's size, and the part number it opens.
    private var tailBytes: Int64 = 0
    private var tailPart = 1
    /// The number the next part gets.
    private var nextNumber = 1
    private var inFlight = 0
    private var tailInFlight = false
    /// Bytes not yet on S3 (the old tail's first, once read back), and the pieces being sent.
    private let pending: S3PendingBytes
    private var receivedHere: Int64 = 0
    private var opening = true
    private var ending: Bool?
    private var failure: UploadFailure?
    private var completion: ((UploadAppender.Ending) -> Void)?
    /// Renews the lock on a timer while the request holds it, whether or not a part is starting (parts
    /// slow to store could otherwise leave it unrenewed until too little of it is left to write).
    private var renewing: Scheduled<Void>?
    var resumeReading: (() -> Void)?
    var onFailure: ((UploadFailure) -> Void)?

    init(backend: S3Backend, setup: UploadSinkSetup) {
        self.backend = backend
        self.setup = setup
        start = setup.record.offset
        pending = S3PendingBytes(memory: backend.bodyMemory, partSize: Int(backend.cutter.partSize))
    }

    /// Nothing may be stored before the request has ended well (a checksum vouches for the body).
    private var holdsBody: Bool { !setup.checkpoints && setup.record.kind != .plain }

    var wantsMore: Bool {
        if holdsBody { return true }
        let part = Int(backend.cutter.partSize)
        // While opening, the tail read back from S3 (up to 5 MiB) is still to come before these bytes.
        guard pending.queued < (opening ? Self.highWater : part + Self.highWater) else { return false }
        return (!opening && pending.sending == 0 && pending.queued < part)
            || backend.bodyMemory.allows(own: pending.held)
    }

    /// Takes the lock and reads the upload back; bytes received meanwhile wait.
    func open() {
        let backend = backend
        let id = setup.record.id
        let start = start
        setup.threadPool.runIfActive(eventLoop: setup.eventLoop) { () throws -> Opened in
            let lock = try backend.lock(id)
            do {  // a failed S3 call too gives the lock back, not only a refusal
                guard let (upload, progress) = try backend.store.load(id) else {
                    throw UploadFailure(status: 404, "the upload is gone from S3")
                }
                guard progress.offset == start, upload.upload.phase == .receiving else {
                    throw UploadFailure(status: 409, "the upload is at \(progress.offset) on S3, not at \(start)")
                }
                if progress.staleTail { try backend.store.deleteTail(id) }
                let tail = progress.tail > 0 ? try backend.store.readTail(id) : []
                guard tail.count == progress.tail else {
                    throw UploadFailure(status: 503, "the upload's tail changed while read")
                }
                return Opened(lock: lock, upload: upload, parts: progress.parts, tail: tail)
            } catch {
                lock?.release()
                throw error
            }
        }.assumeIsolated().whenComplete { result in
            self.opening = false
            switch result {
            case .success(let opened):
                self.lock = opened.lock
                self.upload = opened.upload
                self.parts = opened.parts
                self.nextNumber = opened.parts.count + 1
                self.tailBytes = Int64(opened.tail.count)
                self.tailPart = self.nextNumber
                self.pending.prepend(opened.tail)
                self.keepRenewing(opened.lock)
            case .failure(let error):
                self.failed(UploadFailure(error))
            }
            self.pump()
            if self.wantsMore { self.resumeReading?() }
        }
    }

    private struct Opened: @unchecked Sendable {
        var lock: S3Lock?
        var upload: S3UploadRecord
        var parts: [ListedPart]
        var tail: [UInt8]
    }

    func receive(_ buffer: ByteBuffer) -> Bool {
        guard ending == nil, failure == nil else { return true }
        if let limit = setup.limit, start + receivedHere + Int64(buffer.readableBytes) > limit { return false }
        receivedHere += Int64(buffer.readableBytes)
        if holdsBody && receivedHere > Int64(Self.vouchedLimit) {
            failed(UploadFailure(status: 413, "a checksummed append on S3 holds at most \(Self.vouchedLimit) bytes"))
            return true
        }
        pending.append(buffer)
        pump()
        return true
    }

    func end(keep: Bool, _ completion: @escaping (UploadAppender.Ending) -> Void) {
        guard ending == nil else { return }
        ending = keep
        self.completion = completion
        pump()
    }

    /// Starts parts (up to ``partsAtOnce`` in flight), then at the end of the body the last piece (a part
    /// or the tail) once no part is in flight, then the settling.
    private func pump() {
        guard !opening, !tailInFlight else { return }
        guard failure == nil, let upload, ending != false else {
            if ending != nil && inFlight == 0 { settle() }
            return
        }
        if holdsBody && ending == nil { return }
        while inFlight < Self.partsAtOnce, Int64(pending.queued) >= backend.cutter.partSize {
            send(.part(backend.cutter.partSize), upload: upload)
        }
        if ending == nil, inFlight == 0, !backend.bodyMemory.allows(own: pending.held),
            let piece = backend.cutter.next(buffered: Int64(pending.queued), ending: false, pressed: true)
        {
            send(piece, upload: upload)
        }
        guard ending == true, inFlight == 0 else { return }
        if let piece = backend.cutter.next(buffered: Int64(pending.queued), ending: true) {
            send(piece, upload: upload)
        } else {
            settle()
        }
    }

    /// Takes `piece` off the front of the buffer and stores it on the thread pool.
    private func send(_ piece: S3PartCutter.Piece, upload: S3UploadRecord) {
        let store = backend.store
        let lock = lock
        let number = nextNumber
        // The tail's bytes open the part numbered as it says; once that part is stored the tail is stale.
        let takesTail = tailBytes > 0 && number == tailPart
        let bytes: [UInt8]
        switch piece {
        case .part(let count), .tail(let count): bytes = pending.take(Int(count))
        }
        if case .part = piece {
            nextNumber += 1
            inFlight += 1
        } else {
            tailInFlight = true
        }
        setup.threadPool.runIfActive(eventLoop: setup.eventLoop) { () throws -> ListedPart? in
            try S3Appender.checkLock(lock)
            switch piece {
            case .part:
                let part = try store.uploadPart(upload, number: number, bytes)
                // A crash before this delete leaves a stale tail: it names a part number now taken.
                if takesTail { try? store.deleteTail(upload.id) }
                return part
            case .tail:
                try store.putTail(upload.id, part: number, bytes)
                return nil
            }
        }.assumeIsolated().whenComplete { result in
            self.pending.acknowledged(bytes.count)
            if case .part = piece { self.inFlight -= 1 } else { self.tailInFlight = false }
            switch result {
            case .success(let part?):
                self.parts.append(part)
            case .success(nil):
                self.tailBytes = Int64(bytes.count)
                self.tailPart = number
            case .failure(let error):
                self.failed(UploadFailure(error))
            }
            if self.wantsMore { self.resumeReading?() }
            self.pump()
        }
    }

    /// What S3 now holds in order: parts 1…n without a gap, and the tail when it opens part n+1.
    private var storedOffset: Int64 {
        let progress = S3UploadProgress(
            parts: parts, tail: tailBytes > 0 ? .init(size: tailBytes, part: tailPart) : nil)
        return progress.offset
    }

    private func keepRenewing(_ lock: S3Lock?) {
        guard let lock, ending == nil || inFlight > 0 || tailInFlight || completion != nil else { return }
        let every = TimeAmount.milliseconds(max(backend.lockLifetime / 6, 100))
        let threadPool = setup.threadPool
        let eventLoop = setup.eventLoop
        renewing = eventLoop.assumeIsolated().scheduleTask(in: every) {
            guard self.renewing != nil else { return }
            threadPool.runIfActive(eventLoop: eventLoop) { lock.renewIfDue() }.assumeIsolated().whenSuccess { outcome in
                guard self.renewing != nil else { return }
                if outcome == .lost {
                    self.failed(
                        UploadFailure(status: 423, "the upload's lock on S3 was taken over by another instance"))
                } else {
                    self.keepRenewing(lock)
                }
            }
        }
    }

    /// Renews the lock when due; throws 423 when it is lost or too close to running out to write.
    private static func checkLock(_ lock: S3Lock?) throws(UploadFailure) {
        guard let lock else { return }
        switch lock.renewIfDue() {
        case .lost: throw UploadFailure(status: 423, "the upload's lock on S3 was taken over by another instance")
        default: break
        }
        guard lock.mayWrite else {
            throw UploadFailure(status: 423, "the upload's lock on S3 could not be renewed in time")
        }
    }

    private func failed(_ failure: UploadFailure) {
        guard self.failure == nil else { return }
        self.failure = failure
        pending.drop()
        onFailure?(failure)
    }

    /// Releases the lock, refreshes the record's expiry, frees the upload for the next writer, reports.
    private func settle() {
        guard ending != nil, let completion else { return }
        self.completion = nil
        pending.drop()  // only after a failure, or a body not kept, is anything left
        renewing?.cancel()
        renewing = nil
        var record = setup.record
        // Not opened (refused, or S3 failed): the upload is where it was.
        if upload != nil { record.offset = storedOffset }
        record.expires = WallClock.millis() + setup.expiry
        let store = backend.store
        let upload = upload
        let lock = lock
        let final = record
        setup.threadPool.runIfActive(eventLoop: setup.eventLoop) { () throws in
            defer { lock?.release() }
            guard let upload else { return }
            var saved = upload
            saved.upload.expires = final.expires
            // A length given after the creation (a draft PATCH, tus creation-defer-length).
            saved.upload.length = saved.upload.length ?? final.length
            try store.save(saved)
        }.assumeIsolated().whenComplete { result in
            if case .failure(let error) = result, self.failure == nil { self.failure = UploadFailure(error) }
            self.setup.report(final, failure: self.failure, to: completion)
        }
    }
}
