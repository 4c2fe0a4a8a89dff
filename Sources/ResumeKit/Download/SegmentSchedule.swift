/// Which segment each connection of a segmented download fetches next, and from which of the file's URLs: pure,
/// so the rules are tested without a network. One URL is the plain case (a segment per connection); with mirrors
/// a connection takes the next unfinished segment from the least busy live mirror (at most `perMirror` each), a
/// mirror that fails is dropped and its segments go to the others, and once nothing is left to take a segment
/// crawling on a slow mirror is handed to a mirror at least twice as fast.
struct SegmentSchedule {
    struct Origin {
        var mirror: ResumeToken.Mirror
        var running = 0
        /// Bytes a second of its connections, from the segments it finished.
        var rate: Double?
    }

    /// A segment being fetched: from which mirror, since when, from which byte.
    struct Job: Equatable {
        var origin: Int
        var since: Double
        var from: Int64
        var preempted = false
    }

    enum Action: Equatable {
        case start(segment: Int, origin: Int)
        /// Stop this segment's connection: a faster mirror takes it over from the bytes it holds.
        case preempt(segment: Int)
    }

    private(set) var origins: [Origin]
    private(set) var segments: [ResumeToken.Segment]
    private(set) var jobs: [Int: Job] = [:]
    let connections: Int
    let perMirror: Int

    init(mirrors: [ResumeToken.Mirror], segments: [ResumeToken.Segment], connections: Int, perMirror: Int) {
        origins = mirrors.map { Origin(mirror: $0) }
        self.segments = segments
        self.connections = connections
        self.perMirror = mirrors.count == 1 ? connections : perMirror
    }

    var mirrors: [ResumeToken.Mirror] { origins.map(\.mirror) }
    var live: [Int] { origins.indices.filter { origins[$0].mirror.dropped == nil } }
    var isDone: Bool { segments.allSatisfy(\.isDone) }

    /// What to start (or stop) now: free connections take unfinished segments; `held` is each running
    /// segment's bytes so far, for the rates.
    mutating func next(now: Double, held: (Int) -> Int64) -> [Action] {
        var actions: [Action] = []
        while jobs.count < connections, let origin = freeOrigin() {
            let waiting = segments.indices.filter { !segments[$0].isDone && jobs[$0] == nil }
            guard let segment = waiting.first(where: { segments[$0].committed > 0 }) ?? waiting.first else { break }
            jobs[segment] = Job(origin: origin, since: now, from: segments[segment].committed)
            origins[origin].running += 1
            actions.append(.start(segment: segment, origin: origin))
        }
        // The tail: nothing left to take, a connection free, a faster mirror free for a crawling segment.
        if jobs.count < connections, let origin = freeOrigin(), let fast = origins[origin].rate,
            let (segment, _) = jobs.filter({ !$0.value.preempted && $0.value.origin != origin })
                .map({ ($0.key, rate(of: $0.value, held: held($0.key), now: now)) })
                .filter({ $0.1 * 2 < fast && Double(segments[$0.0].length - held($0.0)) > $0.1 * 2 })
                .min(by: { $0.1 < $1.1 })
        {
            jobs[segment]!.preempted = true
            actions.append(.preempt(segment: segment))
        }
        return actions
    }

    /// The live mirror with the fewest connections that can take one more, the first listed on a tie.
    private func freeOrigin() -> Int? {
        live.filter { origins[$0].running < perMirror }.min { origins[$0].running < origins[$1].running }
    }

    private func rate(of job: Job, held: Int64, now: Double) -> Double {
        now - job.since < 2 ? .infinity : Double(held - job.from) / (now - job.since)
    }

    /// A segment's connection ended holding `held` bytes of it (all of them when it finished); the mirror is
    /// one of its sources once it sent some.
    mutating func ended(segment: Int, held: Int64, verified: Bool? = nil, now: Double) {
        guard let job = jobs.removeValue(forKey: segment) else { return }
        origins[job.origin].running -= 1
        segments[segment].committed = held
        if held > job.from, !(segments[segment].from ?? []).contains(job.origin) {
            segments[segment].from = (segments[segment].from ?? []) + [job.origin]
        }
        segments[segment].verified = verified
        if segments[segment].isDone, now > job.since {
            let rate = Double(held - job.from) / (now - job.since)
            origins[job.origin].rate = origins[job.origin].rate.map { ($0 + rate) / 2 } ?? rate
        }
    }

    /// Drops a mirror: no new segment goes to it. The first reason stays unless `replacing`.
    mutating func drop(_ origin: Int, _ reason: String, replacing: Bool = false) {
        if replacing || origins[origin].mirror.dropped == nil { origins[origin].mirror.dropped = reason }
    }

    /// A whole segment whose pieces were found to match (checked after a kill, before any connection).
    mutating func markVerified(_ segment: Int) {
        segments[segment].verified = true
    }

    /// Starts a segment again from its first byte (its pieces failed, or its sources are on trial).
    mutating func reset(_ segment: Int) {
        segments[segment].committed = 0
        segments[segment].from = nil
        segments[segment].verified = nil
    }

    /// The mirror whose share is being fetched again from the others, after the file's checksum failed.
    private(set) var suspect: Int?
    /// Mirrors whose share was fetched again without curing the checksum: taken back, not suspected again.
    private var cleared: Set<Int> = []

    /// After the whole file's checksum failed: the mirror that sent the most segments and was not suspected yet is
    /// set aside and its segments fetched again from the others (the one before it taken back: the checksum failed
    /// without its bytes too). Nil when every source was tried or no other live mirror could: the mismatch stands.
    mutating func putOnTrial() -> Int? {
        if let previous = suspect {
            origins[previous].mirror.dropped = nil
            cleared.insert(previous)
        }
        let sources = live.filter { o in !cleared.contains(o) && segments.contains { $0.from?.contains(o) == true } }
        suspect = nil
        guard live.count > 1, let next = sources.max(by: { count(from: $0) < count(from: $1) }) else { return nil }
        suspect = next
        drop(next, "on trial: the file's checksum failed with its bytes in")
        for i in segments.indices where segments[i].from?.contains(next) == true { reset(i) }
        return next
    }

    private func count(from origin: Int) -> Int { segments.filter { $0.from?.contains(origin) == true }.count }

    /// Learns a mirror's validator (its HEAD answered).
    mutating func adopt(_ origin: Int, _ resource: DownloadStateMachine.Resource) {
        origins[origin].mirror.adopt(resource)
    }
}

extension ResumeToken.Mirror {
    /// The one URL of a download without mirrors, with the validator the download holds.
    init(url: String, of download: ResumeToken.DownloadPart) {
        self.init(url: url)
        etag = download.etag
        lastModified = download.lastModified
        validator = download.validator
    }

    mutating func adopt(_ resource: DownloadStateMachine.Resource) {
        etag = resource.etag
        lastModified = resource.lastModified
        validator = resource.validator
    }
}
