import FoundationEssentials

/// One upload's lock, kept as an object on S3 itself so that any number of `serve` instances share it
/// with no other service: the object holds who holds it and until when (a ``Grant``).
///
/// Taken with a conditional create (`PUT` with `If-None-Match: *`): of two instances racing, S3 lets one
/// write. A lock whose holder died without releasing it has an expiry in the past; it is taken over with
/// `If-Match` on the ETag just read, so that of two instances taking over the same dead lock only one
/// wins. The holder renews with `If-Match` on its own ETag: a renewal refused means someone took the
/// lock over (ours had run out), and the holder must stop writing at once (``Outcome/lost``). A holder
/// writes only while its lock has at least a third of its lifetime left (``mayWrite(now:)``), so a write
/// started in time ends before anyone else may take the lock over.
///
/// Pure: the caller sends each ``Action`` to S3, feeds the ``Reply`` back, and passes the time
/// (milliseconds since the epoch, the same clock the grant's `expires` uses on every instance).
struct S3LockMachine: Sendable {
    /// The lock object's body.
    struct Grant: Codable, Equatable, Sendable {
        /// The holding instance's id (random per process).
        var holder: String
        /// Milliseconds since the epoch after which anyone may take the lock over.
        var expires: Int64

        var bytes: [UInt8] { Array((try? JSONEncoder().encode(self)) ?? Data()) }

        init(holder: String, expires: Int64) {
            self.holder = holder
            self.expires = expires
        }

        /// `nil` for a body that is not a grant (then the lock counts as expired: nobody can prove to hold it).
        init?(_ bytes: [UInt8]) {
            guard let grant = try? JSONDecoder().decode(Grant.self, from: Data(bytes)) else { return nil }
            self = grant
        }
    }

    /// The precondition of a `PUT`.
    enum Condition: Equatable, Sendable {
        /// `If-None-Match: *`: only if no lock object exists.
        case absent
        /// `If-Match: ETAG`: only if the lock object is still the one read (or last written).
        case matching(String)
    }

    /// What to send to S3 next, or the end of this step.
    enum Action: Equatable, Sendable {
        case put(Grant, Condition)
        case get
        /// `DELETE` with `If-Match: ETAG`.
        case delete(etag: String)
        case finished(Outcome)
    }

    enum Outcome: Equatable, Sendable {
        /// The lock is ours until ``expires``.
        case held
        /// Someone else holds a live lock (its grant, when it could be read).
        case busy(Grant?)
        /// A renewal found the lock taken over: stop writing now.
        case lost
        case released
        /// S3 failed to answer (the lock, if held, still holds until ``expires``).
        case unavailable(String)
    }

    /// S3's answer to the last action.
    enum Reply: Equatable, Sendable {
        /// 2xx to a `PUT`, with the new object's ETag.
        case stored(etag: String)
        /// 200 to the `GET`.
        case found(etag: String, body: [UInt8])
        /// 2xx to the `DELETE`.
        case deleted
        /// 412, or AWS's 409 `ConditionalRequestConflict` (a concurrent conditional write won).
        case preconditionFailed
        /// 404.
        case missing
        /// Anything else: a 5xx, a lost connection.
        case failed(String)
    }

    private enum Phase: Equatable {
        case idle
        case creating
        case reading
        case takingOver
        case holding
        case renewing
        case releasing
    }

    /// This instance's id, written into every grant it takes.
    let holder: String
    /// How long a grant lasts, in milliseconds.
    let lifetime: Int64
    /// The ETag of the lock object as this holder last wrote it; `nil` unless held.
    private(set) var etag: String?
    /// When the held grant runs out.
    private(set) var expires: Int64 = 0
    private var phase = Phase.idle
    /// Creations tried in this acquisition: a lock deleted between a refused create and its read is tried again, a few
    /// times.
    private var creations = 0
    private static let maxCreations = 3

    init(holder: String, lifetime: Int64) {
        self.holder = holder
        self.lifetime = lifetime
    }

    var isHeld: Bool { etag != nil && (phase == .holding || phase == .renewing) }

    /// Whether a write may start now: the lock is held with more than a third of its lifetime left.
    func mayWrite(now: Int64) -> Bool { isHeld && expires - now > lifetime / 3 }

    /// Whether to renew now: two thirds of the lifetime are left or less.
    func renewalDue(now: Int64) -> Bool { phase == .holding && expires - now <= lifetime * 2 / 3 }

    /// Starts taking the lock.
    mutating func acquire(now: Int64) -> Action {
        creations = 0
        return create(now: now)
    }

    /// Starts renewing the held lock (call when ``renewalDue(now:)``).
    mutating func renew(now: Int64) -> Action {
        guard phase == .holding, let etag else { return .finished(.lost) }
        phase = .renewing
        let grant = Grant(holder: holder, expires: now + lifetime)
        pendingExpiry = grant.expires
        return .put(grant, .matching(etag))
    }

    /// Starts giving the lock back; only the grant this holder wrote is deleted.
    mutating func release() -> Action {
        guard let etag, phase == .holding || phase == .renewing else {
            phase = .idle
            return .finished(.released)
        }
        phase = .releasing
        return .delete(etag: etag)
    }

    /// The next action after S3's reply to the last one.
    mutating func handle(_ reply: Reply, now: Int64) -> Action {
        switch (phase, reply) {
        case (.creating, .stored(let etag)), (.takingOver, .stored(let etag)), (.renewing, .stored(let etag)):
            return hold(etag, until: pendingExpiry)
        case (.creating, .preconditionFailed):
            phase = .reading
            return .get
        case (.creating, .missing), (.creating, .found), (.creating, .deleted):
            return fail("S3 answered a conditional PUT of the lock oddly")
        case (.reading, .found(let etag, let body)):
            if let grant = Grant(body), grant.expires > now { return stop(.busy(grant)) }
            phase = .takingOver
            let grant = Grant(holder: holder, expires: now + lifetime)
            pendingExpiry = grant.expires
            return .put(grant, .matching(etag))
        case (.reading, .missing), (.takingOver, .missing):
            // Released between the refused create and now: create again, a few times.
            return creations < Self.maxCreations ? create(now: now) : stop(.busy(nil))
        case (.takingOver, .preconditionFailed):
            // Another instance took the dead lock over first.
            return stop(.busy(nil))
        case (.renewing, .preconditionFailed), (.renewing, .missing):
            etag = nil
            phase = .idle
            return .finished(.lost)
        case (.renewing, .failed(let reason)):
            // Still ours until `expires`; the caller tries again and stops writing in time.
            phase = .holding
            return .finished(.unavailable(reason))
        case (.releasing, _):
            // Deleted, or already someone else's, or S3 failed (the grant runs out by itself).
            etag = nil
            phase = .idle
            return .finished(.released)
        case (_, .failed(let reason)):
            return fail(reason)
        default:
            return fail("S3 answered the lock's \(phase) with \(reply)")
        }
    }

    /// The expiry of the grant whose write is in flight.
    private var pendingExpiry: Int64 = 0

    private mutating func create(now: Int64) -> Action {
        creations += 1
        phase = .creating
        let grant = Grant(holder: holder, expires: now + lifetime)
        pendingExpiry = grant.expires
        return .put(grant, .absent)
    }

    private mutating func hold(_ etag: String, until expiry: Int64) -> Action {
        self.etag = etag
        expires = expiry
        phase = .holding
        return .finished(.held)
    }

    private mutating func stop(_ outcome: Outcome) -> Action {
        etag = nil
        phase = .idle
        return .finished(outcome)
    }

    private mutating func fail(_ reason: String) -> Action {
        let held = phase == .renewing
        if !held {
            etag = nil
            phase = .idle
        } else {
            phase = .holding
        }
        return .finished(.unavailable(reason))
    }
}
