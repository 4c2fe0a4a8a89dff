import Glibc
import NIOCore
import NIOPosix

/// Stores one request's body in an upload's data file, for tus, the draft and plain uploads alike.
///
/// Writes run on the thread pool, one batch at a time; the handler reads from the network only while
/// ``wantsMore`` (less than `highWater` waits, and the server's uploads together hold less than their
/// ``BodyMemory`` budget), so memory stays flat whatever the size and however many uploads run. The bytes
/// become durable with their record at least once a second (``checkpointInterval``) and when the
/// request ends, so an offset the server reports is always on disk. Lives on one event loop.
final class UploadAppender: UploadSink {
    /// How the request ended, once its bytes are settled.
    enum Ending {
        /// The record as now durable (its offset counts every byte kept).
        case settled(UploadRecord)
        case failed(UploadFailure, UploadRecord)
    }

    static let checkpointInterval = TimeAmount.seconds(1)
    private static let highWater = 4 << 20

    private let store: UploadStore
    private let setup: UploadSinkSetup
    private var threadPool: NIOThreadPool { setup.threadPool }
    private var eventLoop: any EventLoop { setup.eventLoop }
    /// The record as last made durable.
    private var record: UploadRecord
    private var data: UploadData?
    private var opening = true
    private var written: Int64
    private var queue: [ByteBuffer] = []
    private var queued = 0
    private var writing = false
    private var ending: Bool?
    private var failure: UploadFailure?
    private var nextCheckpoint: NIODeadline
    private var completion: ((Ending) -> Void)?
    var resumeReading: (() -> Void)?
    var onFailure: ((UploadFailure) -> Void)?

    init(store: UploadStore, setup: UploadSinkSetup) {
        self.store = store
        self.setup = setup
        record = setup.record
        written = setup.record.offset
        nextCheckpoint = .now() + Self.checkpointInterval
    }

    /// Opens the data file; bytes received meanwhile wait in the queue.
    func open() {
        let store = store
        let id = record.id
        let offset = setup.record.offset
        threadPool.runIfActive(eventLoop: eventLoop) { try store.openData(id, at: offset) }
            .assumeIsolated().whenComplete { result in
                self.opening = false
                switch result {
                case .success(let data): self.data = data
                case .failure(let error): self.failed(UploadFailure(error))
                }
                self.pump()
            }
    }

    /// Bytes received so far, written or queued.
    var received: Int64 { written + Int64(queued) }

    var wantsMore: Bool { queued < Self.highWater && store.bodyMemory.allows(own: queued) }

    func receive(_ buffer: ByteBuffer) -> Bool {
        guard ending == nil, failure == nil else { return true }
        if let limit = setup.limit, received + Int64(buffer.readableBytes) > limit { return false }
        queue.append(buffer)
        queued += buffer.readableBytes
        store.bodyMemory.take(buffer.readableBytes)
        pump()
        return true
    }

    /// The request is over: the bytes count when `keep` (else the offset stays where it began), are
    /// made durable with the record, and `completion` runs once on the event loop.
    func end(keep: Bool, _ completion: @escaping (Ending) -> Void) {
        guard ending == nil else { return }
        ending = keep
        self.completion = completion
        pump()
    }

    /// Starts the next write, a checkpoint, or the settling; one thing at a time.
    private func pump() {
        guard !writing, !opening else { return }
        guard failure == nil, let data, !queue.isEmpty else {
            if ending != nil { settle() }
            return
        }
        let batch = queue
        let bytes = queued
        let offset = written
        queue.removeAll(keepingCapacity: true)
        let due = setup.checkpoints && NIODeadline.now() >= nextCheckpoint
        var next = record
        next.offset = offset + Int64(bytes)
        next.expires = WallClock.millis() + setup.expiry
        let durable = next
        let store = store
        writing = true
        threadPool.runIfActive(eventLoop: eventLoop) { () throws in
            try data.write(batch, at: offset)
            if due { try store.persist(data, durable) }
        }.assumeIsolated().whenComplete { result in
            self.writing = false
            self.queued -= bytes
            self.store.bodyMemory.give(bytes)
            switch result {
            case .success:
                self.written += Int64(bytes)
                if due {
                    self.record = durable
                    self.setup.table.update(durable, releasing: false)
                    self.nextCheckpoint = .now() + Self.checkpointInterval
                }
            case .failure(let error):
                self.failed(UploadFailure(error))
                self.dropQueue()
            }
            if self.queued < Self.highWater { self.resumeReading?() }
            self.pump()
        }
    }

    /// Bytes that will not be written (the request failed) leave memory and the budget.
    private func dropQueue() {
        store.bodyMemory.give(queued)
        queue.removeAll()
        queued = 0
    }

    deinit {
        if queued > 0 { store.bodyMemory.give(queued) }
    }

    private func failed(_ failure: UploadFailure) {
        guard self.failure == nil else { return }
        self.failure = failure
        onFailure?(failure)
    }

    /// Makes the kept bytes durable with the record, frees the upload for the next writer, reports.
    private func settle() {
        guard let keep = ending, let completion else { return }
        self.completion = nil
        dropQueue()  // only after a failure is anything left
        writing = true
        var settling = record
        if keep && failure == nil { settling.offset = written }
        settling.expires = WallClock.millis() + setup.expiry
        let final = settling
        let changed = final != record
        let data = data
        let store = store
        threadPool.runIfActive(eventLoop: eventLoop) { () throws in
            defer { data?.close() }
            if changed { try store.persist(data, final) }
        }.assumeIsolated().whenComplete { result in
            self.data = nil
            if case .failure(let error) = result, self.failure == nil { self.failure = UploadFailure(error) }
            let durable = self.failure == nil ? final : self.record
            self.record = durable
            self.setup.report(durable, failure: self.failure, to: completion)
        }
    }
}
