import ResumeKit
import Testing

@testable import ResumeServer

/// The S3 store's lock (``S3LockMachine``) over a scripted S3: every answer S3 can give to each step,
/// as two instances see them — taken, busy, renewed, expired and taken over, lost mid-write, released.
@Suite("serve S3 lock")
struct ServeS3LockTests {
    typealias M = S3LockMachine
    static let lifetime: Int64 = 30_000

    static func machine(_ holder: String = "a") -> M { M(holder: holder, lifetime: lifetime) }

    static func grant(_ holder: String, _ expires: Int64) -> [UInt8] { M.Grant(holder: holder, expires: expires).bytes }

    @Test("taken: a conditional create that S3 accepts holds the lock for its lifetime")
    func taken() {
        var lock = Self.machine()
        #expect(lock.acquire(now: 1000) == .put(M.Grant(holder: "a", expires: 31_000), .absent))
        #expect(lock.handle(.stored(etag: "\"e1\""), now: 1010) == .finished(.held))
        #expect(lock.isHeld && lock.etag == "\"e1\"" && lock.expires == 31_000)
        #expect(lock.mayWrite(now: 1010))
        #expect(!lock.renewalDue(now: 1010))
    }

    @Test("busy: a live lock of another instance is read and left alone")
    func busy() {
        var lock = Self.machine()
        _ = lock.acquire(now: 1000)
        #expect(lock.handle(.preconditionFailed, now: 1000) == .get)
        let theirs = M.Grant(holder: "b", expires: 20_000)
        #expect(lock.handle(.found(etag: "\"b1\"", body: theirs.bytes), now: 1000) == .finished(.busy(theirs)))
        #expect(!lock.isHeld && !lock.mayWrite(now: 1000))
    }

    @Test("renewed: due at two thirds left, a renewal matches the holder's own ETag and extends the expiry")
    func renewed() {
        var lock = Self.machine()
        _ = lock.acquire(now: 0)
        _ = lock.handle(.stored(etag: "\"e1\""), now: 0)
        #expect(!lock.renewalDue(now: 9_999))
        #expect(lock.renewalDue(now: 10_000))
        #expect(lock.renew(now: 10_000) == .put(M.Grant(holder: "a", expires: 40_000), .matching("\"e1\"")))
        // Writes go on while the renewal is in flight.
        #expect(lock.mayWrite(now: 10_000))
        #expect(lock.handle(.stored(etag: "\"e2\""), now: 10_050) == .finished(.held))
        #expect(lock.etag == "\"e2\"" && lock.expires == 40_000)
        #expect(lock.mayWrite(now: 29_000))
    }

    @Test("a renewal S3 fails to answer keeps the lock until its expiry; writes stop a third before it")
    func renewalUnanswered() {
        var lock = Self.machine()
        _ = lock.acquire(now: 0)
        _ = lock.handle(.stored(etag: "\"e1\""), now: 0)
        _ = lock.renew(now: 10_000)
        #expect(lock.handle(.failed("503 SlowDown"), now: 10_100) == .finished(.unavailable("503 SlowDown")))
        #expect(lock.isHeld && lock.expires == 30_000)
        #expect(lock.mayWrite(now: 19_000))
        #expect(!lock.mayWrite(now: 20_000))
        #expect(lock.renewalDue(now: 20_000))
    }

    @Test("expired and taken over: a dead holder's lock is replaced with If-Match on the ETag read")
    func expiredTakenOver() {
        var lock = Self.machine("b")
        _ = lock.acquire(now: 50_000)
        #expect(lock.handle(.preconditionFailed, now: 50_000) == .get)
        let dead = Self.grant("a", 31_000)
        #expect(
            lock.handle(.found(etag: "\"a1\"", body: dead), now: 50_010)
                == .put(M.Grant(holder: "b", expires: 80_010), .matching("\"a1\"")))
        #expect(lock.handle(.stored(etag: "\"b1\""), now: 50_020) == .finished(.held))
        #expect(lock.expires == 80_010 && lock.etag == "\"b1\"")
    }

    @Test("a lock object that is not a grant counts as expired and is taken over")
    func garbageTakenOver() {
        var lock = Self.machine("b")
        _ = lock.acquire(now: 5)
        _ = lock.handle(.preconditionFailed, now: 5)
        #expect(
            lock.handle(.found(etag: "\"x\"", body: Array("not json".utf8)), now: 5)
                == .put(M.Grant(holder: "b", expires: 30_005), .matching("\"x\"")))
    }

    @Test("two instances take over the same dead lock: the second If-Match loses and is busy")
    func takeoverRace() {
        var b = Self.machine("b")
        var c = Self.machine("c")
        let dead = Self.grant("a", 10)
        for lock in [0, 1] {
            var m = lock == 0 ? b : c
            _ = m.acquire(now: 100)
            _ = m.handle(.preconditionFailed, now: 100)
            _ = m.handle(.found(etag: "\"a1\"", body: dead), now: 100)
            if lock == 0 { b = m } else { c = m }
        }
        #expect(b.handle(.stored(etag: "\"b1\""), now: 101) == .finished(.held))
        #expect(c.handle(.preconditionFailed, now: 101) == .finished(.busy(nil)))
        #expect(b.isHeld && !c.isHeld)
    }

    @Test("released between the refused create and the read: created again, a few times at most")
    func vanished() {
        var lock = Self.machine()
        _ = lock.acquire(now: 0)
        _ = lock.handle(.preconditionFailed, now: 0)
        #expect(lock.handle(.missing, now: 0) == .put(M.Grant(holder: "a", expires: 30_000), .absent))
        _ = lock.handle(.preconditionFailed, now: 0)
        #expect(lock.handle(.missing, now: 0) == .put(M.Grant(holder: "a", expires: 30_000), .absent))
        _ = lock.handle(.preconditionFailed, now: 0)
        #expect(lock.handle(.missing, now: 0) == .finished(.busy(nil)))
    }

    @Test("lost mid-write: a renewal refused means another instance took over; no write may follow")
    func lostMidWrite() {
        var lock = Self.machine()
        _ = lock.acquire(now: 0)
        _ = lock.handle(.stored(etag: "\"e1\""), now: 0)
        #expect(lock.mayWrite(now: 9_000))
        _ = lock.renew(now: 10_000)
        #expect(lock.handle(.preconditionFailed, now: 10_020) == .finished(.lost))
        #expect(!lock.isHeld && !lock.mayWrite(now: 10_020) && lock.etag == nil)
        // Deleted under the holder (an operator, a lifecycle rule): lost too.
        var other = Self.machine()
        _ = other.acquire(now: 0)
        _ = other.handle(.stored(etag: "\"e1\""), now: 0)
        _ = other.renew(now: 10_000)
        #expect(other.handle(.missing, now: 10_020) == .finished(.lost))
        // Releasing a lost lock deletes nothing.
        #expect(lock.release() == .finished(.released))
    }

    @Test("released: only the holder's own grant is deleted, whatever S3 answers")
    func released() {
        var lock = Self.machine()
        _ = lock.acquire(now: 0)
        _ = lock.handle(.stored(etag: "\"e1\""), now: 0)
        #expect(lock.release() == .delete(etag: "\"e1\""))
        #expect(lock.handle(.deleted, now: 1) == .finished(.released))
        #expect(!lock.isHeld)
        var taken = Self.machine()
        _ = taken.acquire(now: 0)
        _ = taken.handle(.stored(etag: "\"e1\""), now: 0)
        _ = taken.release()
        #expect(taken.handle(.preconditionFailed, now: 1) == .finished(.released))
    }

    @Test("an S3 that fails the create leaves the lock not taken")
    func createFails() {
        var lock = Self.machine()
        _ = lock.acquire(now: 0)
        #expect(lock.handle(.failed("500"), now: 0) == .finished(.unavailable("500")))
        #expect(!lock.isHeld)
    }

    // MARK: Offsets from what S3 holds

    static func part(_ number: Int, _ size: Int64) -> ListedPart {
        ListedPart(number: number, size: size, etag: "\"p\(number)\"")
    }

    @Test(
        "the offset is the contiguous parts plus a current tail; a stale tail or a part after a gap counts for nothing")
    func progress() {
        let mib: Int64 = 1 << 20
        var p = S3UploadProgress(
            parts: [Self.part(2, 5 * mib), Self.part(1, 5 * mib)], tail: .init(size: 100, part: 3))
        #expect(p.offset == 10 * mib + 100 && p.nextPart == 3 && !p.staleTail)
        // A crash after part 3 took the tail's bytes, before the tail was deleted.
        p = S3UploadProgress(
            parts: [Self.part(1, 5 * mib), Self.part(2, 5 * mib), Self.part(3, 5 * mib)],
            tail: .init(size: 100, part: 3))
        #expect(p.offset == 15 * mib && p.nextPart == 4 && p.staleTail)
        p = S3UploadProgress(parts: [Self.part(1, 5 * mib), Self.part(3, 5 * mib)], tail: nil)
        #expect(p.offset == 5 * mib && p.nextPart == 2 && p.parts.count == 1)
        p = S3UploadProgress(parts: [], tail: .init(size: 7, part: 1))
        #expect(p.offset == 7 && p.nextPart == 1)
        p = S3UploadProgress(parts: [], tail: nil)
        #expect(p.offset == 0 && !p.staleTail)
    }

    @Test("parts while a request runs, then a part or a tail at its end; short parts only under memory pressure")
    func cutting() {
        let mib: Int64 = 1 << 20
        let cut = S3PartCutter(partSize: 8 * mib)
        #expect(S3PartCutter(partSize: 1).partSize == 5 * mib)
        #expect(cut.next(buffered: 7 * mib, ending: false) == nil)
        #expect(cut.next(buffered: 9 * mib, ending: false) == .part(8 * mib))
        #expect(cut.next(buffered: 9 * mib, ending: true) == .part(8 * mib))
        #expect(cut.next(buffered: 6 * mib, ending: true) == .part(6 * mib))
        #expect(cut.next(buffered: 4 * mib, ending: true) == .tail(4 * mib))
        #expect(cut.next(buffered: 0, ending: true) == nil)
        // Over the memory budget: S3's smallest part goes without waiting to be whole, never less.
        #expect(cut.next(buffered: 6 * mib, ending: false, pressed: true) == .part(6 * mib))
        #expect(cut.next(buffered: 4 * mib, ending: false, pressed: true) == nil)
        #expect(cut.next(buffered: 9 * mib, ending: false, pressed: true) == .part(8 * mib))
    }

    @Test("keys: served objects under the prefix, upload state under its hidden folder")
    func keys() {
        let keys = S3UploadKeys(prefix: "inbox")
        #expect(keys.object(["a", "b.bin"]) == "inbox/a/b.bin")
        #expect(keys.record("ab") == "inbox/.resumectl-uploads/ab.json")
        #expect(keys.lock("ab") == "inbox/.resumectl-uploads/ab.lock")
        #expect(keys.tail("ab") == "inbox/.resumectl-uploads/ab.tail")
        #expect(S3UploadKeys(prefix: "").object(["x"]) == "x")
    }
}
