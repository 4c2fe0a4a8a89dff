import Testing

@testable import ResumeKit

/// The rules of a segmented download over one URL or several mirrors, without a network.
@Suite struct SegmentScheduleTests {
    static func schedule(mirrors: Int, segments: Int, connections: Int, perMirror: Int = 2) -> SegmentSchedule {
        SegmentSchedule(
            mirrors: (0..<mirrors).map { ResumeToken.Mirror(url: "http://m\($0)/f") },
            segments: SegmentRules.split(total: Int64(segments) << 20, runsOf: 1 << 20),
            connections: connections, perMirror: perMirror)
    }

    static func starts(_ actions: [SegmentSchedule.Action]) -> [(segment: Int, origin: Int)] {
        actions.compactMap { if case .start(let s, let o) = $0 { (s, o) } else { nil } }
    }

    @Test func oneURLTakesASegmentAConnection() {
        var s = Self.schedule(mirrors: 1, segments: 4, connections: 4)
        let started = Self.starts(s.next(now: 0) { _ in 0 })
        #expect(started.map(\.segment) == [0, 1, 2, 3])
        #expect(started.allSatisfy { $0.origin == 0 })
        #expect(s.next(now: 1) { _ in 0 }.isEmpty)
    }

    @Test func connectionsAreSpreadOverMirrorsAtMostPerMirrorEach() {
        var s = Self.schedule(mirrors: 3, segments: 20, connections: 8, perMirror: 2)
        let started = Self.starts(s.next(now: 0) { _ in 0 })
        // Three mirrors of two connections each: six, not eight.
        #expect(started.count == 6)
        #expect(Dictionary(grouping: started, by: \.origin).mapValues(\.count) == [0: 2, 1: 2, 2: 2])
        #expect(Set(started.map(\.segment)).count == 6)
    }

    @Test func aDroppedMirrorGetsNoSegmentAndItsSegmentGoesToAnother() {
        var s = Self.schedule(mirrors: 2, segments: 4, connections: 2, perMirror: 1)
        let started = Self.starts(s.next(now: 0) { _ in 0 })
        let onOne = started.first { $0.origin == 1 }!
        s.ended(segment: onOne.segment, held: 300, now: 1)
        s.drop(1, "refused")
        #expect(s.live == [0])
        // Mirror 0 is busy with one connection of one allowed: nothing starts until it is free.
        #expect(s.next(now: 1) { _ in 0 }.isEmpty)
        let zero = started.first { $0.origin == 0 }!
        s.ended(segment: zero.segment, held: 1 << 20, now: 2)
        // The partly fetched segment comes first, from the live mirror; its bytes stay.
        #expect(Self.starts(s.next(now: 2) { _ in 0 }).map(\.segment) == [onOne.segment])
        #expect(s.segments[onOne.segment].committed == 300)
        #expect(s.segments[onOne.segment].from == [1])
    }

    @Test func aCrawlingSegmentIsHandedToAMirrorTwiceAsFast() {
        var s = Self.schedule(mirrors: 2, segments: 2, connections: 2, perMirror: 1)
        let started = Self.starts(s.next(now: 0) { _ in 0 })
        let fast = started.first { $0.origin == 0 }!.segment
        let slow = started.first { $0.origin == 1 }!.segment
        // The fast mirror finished its MiB in 1 s; the slow one has 10 KiB after 4 s.
        s.ended(segment: fast, held: 1 << 20, now: 1)
        #expect(s.next(now: 4) { _ in 10 << 10 } == [.preempt(segment: slow)])
        // Asked once: the stop is on its way.
        #expect(s.next(now: 4.5) { _ in 10 << 10 }.isEmpty)
        s.ended(segment: slow, held: 10 << 10, now: 5)
        #expect(Self.starts(s.next(now: 5) { _ in 0 }).map(\.origin) == [0])
    }

    @Test func aSegmentAtMoreThanHalfTheFastestRateIsLeftAlone() {
        var s = Self.schedule(mirrors: 2, segments: 2, connections: 2, perMirror: 1)
        let started = Self.starts(s.next(now: 0) { _ in 0 })
        // 512 KiB/s against 273 KiB/s: not twice as fast.
        s.ended(segment: started[0].segment, held: 1 << 20, now: 2)
        #expect(s.next(now: 3) { _ in 800 << 10 }.isEmpty)
    }

    @Test func aFailedChecksumPutsTheLargestSourceOnTrialAndRefetchesItsShare() {
        var s = Self.schedule(mirrors: 3, segments: 6, connections: 6, perMirror: 2)
        for start in Self.starts(s.next(now: 0) { _ in 0 }) {
            s.ended(segment: start.segment, held: 1 << 20, now: 1)
        }
        // Two a mirror: the first listed of the equal sources goes on trial.
        let suspect = s.putOnTrial()
        #expect(suspect != nil)
        #expect(s.mirrors[suspect!].dropped != nil)
        let reset = s.segments.indices.filter { s.segments[$0].committed == 0 }
        #expect(reset.count == 2)
        let refetched = Self.starts(s.next(now: 2) { _ in 0 })
        #expect(refetched.allSatisfy { $0.origin != suspect && reset.contains($0.segment) })
        for start in refetched { s.ended(segment: start.segment, held: 1 << 20, now: 3) }
        // Still failing without its bytes: it is taken back, and another is tried; never the same one twice.
        let second = s.putOnTrial()
        #expect(second != nil && second != suspect)
        #expect(s.mirrors[suspect!].dropped == nil)
        for start in Self.starts(s.next(now: 4) { _ in 0 }) { s.ended(segment: start.segment, held: 1 << 20, now: 5) }
        let third = s.putOnTrial()
        #expect(third != nil && third != suspect && third != second)
        for start in Self.starts(s.next(now: 6) { _ in 0 }) { s.ended(segment: start.segment, held: 1 << 20, now: 7) }
        #expect(s.putOnTrial() == nil)
    }

    @Test func noTrialWithOneLiveMirror() {
        var s = Self.schedule(mirrors: 2, segments: 2, connections: 2, perMirror: 1)
        for start in Self.starts(s.next(now: 0) { _ in 0 }) { s.ended(segment: start.segment, held: 1 << 20, now: 1) }
        s.drop(1, "gone")
        #expect(s.putOnTrial() == nil)
    }

    @Test func runsOfPiecesCoverTheFileWithoutGapsOrOverlap() {
        for (total, unit) in [(Int64(10 << 20) + 5, Int64(1 << 20)), (300 << 20, 256 << 10), (5, 1 << 20)] {
            let segments = SegmentRules.split(total: total, runsOf: unit)
            #expect(segments.first?.start == 0)
            #expect(segments.last?.end == total - 1)
            #expect(zip(segments, segments.dropFirst()).allSatisfy { $0.end + 1 == $1.start })
            #expect(segments.dropLast().allSatisfy { $0.length % unit == 0 && $0.length >= min(total, 1 << 20) })
            #expect(segments.count <= 1024)
        }
    }
}
