import ResumeKit
import Synchronization

/// One upload's ``S3LockMachine`` run against S3: what an appending request holds while it writes.
/// Every method blocks (the store's thread pool); ``mayWrite`` may be asked from anywhere.
final class S3Lock: Sendable {
    private let client: S3Client
    private let key: String
    private let machine: Mutex<S3LockMachine>
    /// Held across a renewal's request: a writer that asks meanwhile waits for it instead of reading
    /// the old expiry (with parts sent four at once, several threads ask together).
    private let renewal = Mutex<Void>(())
    private let clock: @Sendable () -> Int64

    init(
        client: S3Client, key: String, holder: String, lifetime: Int64,
        clock: @escaping @Sendable () -> Int64 = WallClock.millis
    ) {
        self.client = client
        self.key = key
        self.clock = clock
        machine = Mutex(S3LockMachine(holder: holder, lifetime: lifetime))
    }

    /// Takes the lock: `.held`, `.busy` (someone else's live lock) or `.unavailable`.
    func acquire() -> S3LockMachine.Outcome {
        let now = clock()
        return run(machine.withLock { $0.acquire(now: now) })
    }

    /// Renews the lock when due; `.held` when nothing was due.
    func renewIfDue() -> S3LockMachine.Outcome {
        renewal.withLock { _ in
            let now = clock()
            let action = machine.withLock { lock -> S3LockMachine.Action in
                lock.renewalDue(now: now) ? lock.renew(now: now) : .finished(lock.isHeld ? .held : .lost)
            }
            return run(action)
        }
    }

    /// Gives the lock back (deletes this holder's grant only), after any renewal in flight: deleting
    /// with the ETag a renewal is replacing would leave the renewed grant behind, held by nobody.
    func release() {
        renewal.withLock { _ in
            _ = run(machine.withLock { $0.release() })
        }
    }

    /// Whether a write may start now (held, with a third of the lifetime left).
    var mayWrite: Bool {
        let now = clock()
        return machine.withLock { $0.mayWrite(now: now) }
    }

    private func run(_ first: S3LockMachine.Action) -> S3LockMachine.Outcome {
        var action = first
        while true {
            let reply: S3LockMachine.Reply
            switch action {
            case .finished(let outcome):
                return outcome
            case .put(let grant, let condition):
                var headers: HeaderFields = ["Content-Type": "application/json"]
                switch condition {
                case .absent: headers.set("If-None-Match", "*")
                case .matching(let etag): headers.set("If-Match", etag)
                }
                reply = Self.reply(to: "PUT") { () throws(S3Failure) in
                    try client.send("PUT", key: key, headers: headers, body: grant.bytes)
                }
            case .get:
                reply = Self.reply(to: "GET") { () throws(S3Failure) in try client.send("GET", key: key) }
            case .delete(let etag):
                reply = Self.reply(to: "DELETE") { () throws(S3Failure) in
                    try client.send("DELETE", key: key, headers: ["If-Match": etag])
                }
            }
            if case .preconditionFailed = reply { client.metrics?.s3LockConflicts.add(1, ordering: .relaxed) }
            let now = clock()
            action = machine.withLock { $0.handle(reply, now: now) }
        }
    }

    /// S3's answer as the machine reads it.
    static func reply(to method: String, _ send: () throws(S3Failure) -> S3Client.Response) -> S3LockMachine.Reply {
        let response: S3Client.Response
        do {
            response = try send()
        } catch {
            return .failed(error.reason)
        }
        switch response.status {
        case 200..<300:
            switch method {
            case "GET": return .found(etag: response.etag ?? "", body: response.body)
            case "DELETE": return .deleted
            default: return .stored(etag: response.etag ?? "")
            }
        // 409: AWS's ConditionalRequestConflict, a concurrent conditional write to the key won.
        case 412, 409: return .preconditionFailed
        case 404: return .missing
        default: return .failed("S3 answered \(response.status) to the lock's \(method)")
        }
    }
}
