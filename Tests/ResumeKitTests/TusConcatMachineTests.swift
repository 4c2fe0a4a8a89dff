import FoundationEssentials
import Testing

@testable import ResumeKit

private let endpoint = "http://h/files/"
/// A tus server offering concatenation, without creation-with-upload: creations carry no bytes.
private let concatenating = TusCapabilities(extensions: ["creation", "termination", "concatenation"])

/// The machine of `size` bytes in `count` partials, as a new upload with `--connections count` starts it.
private func fresh(size: Int64 = 4000, count: Int = 4) -> TusConcatMachine {
    TusConcatMachine(
        size: size, creationURL: endpoint, filename: "a.bin", concat: ResumeToken.TusConcat(size: size, count: count),
        capabilities: concatenating)
}

/// Answers partial `index`'s creation with a 201 naming `/files/p<index>`.
private func create(_ m: inout TusConcatMachine, _ index: Int) -> UploadDecision {
    let plan = m.plans(besides: []).first { if case .partial(index, _) = $0 { true } else { false } }
    guard let plan, case .partial(_, .create) = plan else {
        Issue.record("partial \(index) has no creation planned: \(m.plans(besides: []))")
        return .fail(reason: "test")
    }
    return m.response(head(201, [("Location", "/files/p\(index)")]), to: plan)
}

/// Answers partial `index`'s append with the whole range acknowledged.
private func finish(_ m: inout TusConcatMachine, _ index: Int) -> UploadDecision {
    guard
        let plan = m.plans(besides: []).first(where: { if case .partial(index, .append) = $0 { true } else { false } }),
        case .partial(_, .append(_, _, let offset, let length, _)) = plan
    else {
        Issue.record("partial \(index) has no append planned: \(m.plans(besides: []))")
        return .fail(reason: "test")
    }
    return m.response(head(204, [("Upload-Offset", String(offset + length))]), to: plan)
}

@Suite struct TusConcatMachineTests {
    @Test func rangesCoverTheFileInOrder() {
        let concat = ResumeToken.TusConcat(size: 10, count: 4)
        #expect(concat.partials.map(\.start) == [0, 3, 6, 8])
        #expect(concat.partials.map(\.length) == [3, 3, 2, 2])
        // Never an empty partial: a file of 2 bytes is 2 ranges however many connections.
        #expect(ResumeToken.TusConcat(size: 2, count: 8).partials.count == 2)
    }

    @Test func createsEveryPartialAtOnceWithUploadConcatPartial() {
        let m = fresh()
        let plans = m.plans(besides: [])
        #expect(plans.count == 4)
        for (i, plan) in plans.enumerated() {
            let exchange = m.exchange(for: plan)
            #expect(exchange?.method == "POST" && exchange?.url == nil)
            #expect(exchange?.headers["Upload-Concat"] == "partial")
            #expect(exchange?.headers["Upload-Length"] == "1000")
            #expect(exchange?.headers["Tus-Resumable"] == "1.0.0")
            // No creation-with-upload: the POST is empty, at its range's place.
            #expect(exchange?.body == BodyRange(offset: Int64(i) * 1000, length: 0), "partial \(i)")
        }
        // What runs is not planned again beside itself.
        #expect(m.plans(besides: [plans[1], plans[3]]).count == 2)
        #expect(m.plans(besides: plans).isEmpty)
    }

    @Test func appendsReadFromEachRangesPlaceInTheFile() {
        var m = fresh()
        #expect(create(&m, 2) == .proceed)
        guard let plan = m.plans(besides: []).first(where: { if case .partial(2, _) = $0 { true } else { false } })
        else {
            Issue.record("no plan for partial 2")
            return
        }
        let exchange = m.exchange(for: plan)
        #expect(exchange?.method == "PATCH" && exchange?.url == "http://h/files/p2")
        #expect(exchange?.headers["Upload-Offset"] == "0")
        #expect(exchange?.body == BodyRange(offset: 2000, length: 1000))
        #expect(m.response(head(204, [("Upload-Offset", "400")]), to: plan) == .proceed)
        #expect(m.acknowledgedBytes == 400)
        guard let next = m.plans(besides: []).first(where: { if case .partial(2, _) = $0 { true } else { false } })
        else {
            Issue.record("no plan for partial 2")
            return
        }
        #expect(m.exchange(for: next)?.body == BodyRange(offset: 2400, length: 600))
    }

    @Test func theFinalUploadComesOnlyAfterEveryPartialIsComplete() {
        var m = fresh()
        for i in 0..<4 { #expect(create(&m, i) == .proceed) }
        for i in [3, 0, 2] {
            #expect(finish(&m, i) == .proceed)
            #expect(!m.plans(besides: []).contains { if case .concatenate = $0 { true } else { false } })
        }
        #expect(m.plans(besides: []).count == 1)  // partial 1 alone
        #expect(finish(&m, 1) == .proceed)
        #expect(m.acknowledgedBytes == 4000)
        let plan = m.plan()
        guard case .concatenate = plan, let exchange = m.exchange(for: plan) else {
            Issue.record("expected the final upload, got \(plan)")
            return
        }
        #expect(exchange.method == "POST" && exchange.url == nil)
        #expect(
            exchange.headers["Upload-Concat"]
                == "final;http://h/files/p0 http://h/files/p1 http://h/files/p2 http://h/files/p3")
        // The final upload has no Upload-Length (the server adds the partials up); tuspyserver wants the metadata.
        #expect(exchange.headers["Upload-Length"] == nil)
        #expect(exchange.headers["Upload-Metadata"] == TusStateMachine.metadata(filename: "a.bin"))
        #expect(m.response(head(201, [("Location", "/files/final")]), to: plan) == .completed)
        #expect(m.location == "http://h/files/final")
        #expect(m.plan() == .finished)
    }

    @Test func aFailedFinalUploadIsRetried() {
        var m = fresh(count: 2)
        for i in 0..<2 {
            _ = create(&m, i)
            _ = finish(&m, i)
        }
        let plan = m.plan()
        guard case .concatenate = plan else {
            Issue.record("expected the final upload")
            return
        }
        guard case .retry = m.response(head(503), to: plan) else {
            Issue.record("a 503 to the final upload is retried")
            return
        }
        #expect(m.plan() == plan)
        guard case .retry = m.exchangeFailed("connection reset", during: plan) else {
            Issue.record("a lost final upload is retried")
            return
        }
        #expect(m.plan() == plan)
        #expect(m.response(head(201, [("Location", "http://h/files/f")]), to: plan) == .completed)
        #expect(m.location == "http://h/files/f")
    }

    @Test func aFinalUploadRefusedForAMissingPartialStartsEveryPartialAgain() {
        var m = fresh(count: 2)
        for i in 0..<2 {
            _ = create(&m, i)
            _ = finish(&m, i)
        }
        guard case .restarted = m.response(head(404), to: m.plan()) else {
            Issue.record("a 404 to the final upload (a partial gone) starts over")
            return
        }
        #expect(m.acknowledgedBytes == 0)
        #expect(m.plans(besides: []).allSatisfy { if case .partial(_, .create) = $0 { true } else { false } })
        var part = ResumeToken.UploadPart(
            source: .init(path: "/a", size: 4000, mtime: 0, inode: 0, edgeHash: ""), wire: .undecided)
        m.record(into: &part)
        #expect(part.concat?.partials.allSatisfy { $0.url == nil && $0.offset == 0 } == true)
    }

    @Test func aResumeAsksEachUnfinishedPartialForItsOffsetAndNeverRecreatesIt() {
        let kept = ResumeToken.TusConcat(partials: [
            .init(start: 0, length: 1000, url: "http://h/files/p0", offset: 1000),
            .init(start: 1000, length: 1000, url: "http://h/files/p1", offset: 200),
            .init(start: 2000, length: 1000, url: "http://h/files/p2", offset: 0),
        ])
        var m = TusConcatMachine(size: 3000, creationURL: endpoint, filename: "a.bin", concat: kept)
        // No OPTIONS: every partial exists. The complete one is not asked again.
        let plans = m.plans(besides: [])
        #expect(plans.map { m.exchange(for: $0)?.method } == ["HEAD", "HEAD"])
        #expect(plans.map { m.exchange(for: $0)?.url } == ["http://h/files/p1", "http://h/files/p2"])
        #expect(m.acknowledgedBytes == 1200)
        #expect(m.response(head(200, [("Upload-Offset", "600"), ("Upload-Length", "1000")]), to: plans[0]) == .proceed)
        guard let next = m.plans(besides: [plans[1]]).first, let exchange = m.exchange(for: next) else {
            Issue.record("expected an append of partial 1")
            return
        }
        #expect(exchange.method == "PATCH" && exchange.url == "http://h/files/p1")
        #expect(exchange.headers["Upload-Offset"] == "600")
        #expect(exchange.body == BodyRange(offset: 1600, length: 400))
        #expect(m.acknowledgedBytes == 1600)
    }

    @Test func aPartialTheServerLostIsCreatedAgainAloneTheOthersKeepTheirs() {
        let kept = ResumeToken.TusConcat(partials: [
            .init(start: 0, length: 1000, url: "http://h/files/p0", offset: 500),
            .init(start: 1000, length: 1000, url: "http://h/files/p1", offset: 700),
        ])
        var m = TusConcatMachine(
            size: 2000, creationURL: endpoint, filename: "a.bin", concat: kept, capabilities: concatenating)
        let plans = m.plans(besides: [])
        guard case .noted(let lines) = m.response(head(404), to: plans[0]) else {
            Issue.record("a lost partial is said and created anew")
            return
        }
        #expect(lines.count == 1 && lines[0].contains("partial upload 1 of 2"))
        #expect(m.acknowledgedBytes == 700)
        guard let again = m.plans(besides: [plans[1]]).first, let exchange = m.exchange(for: again) else {
            Issue.record("expected partial 1's creation")
            return
        }
        #expect(exchange.method == "POST" && exchange.headers["Upload-Concat"] == "partial")
        #expect(exchange.headers["Upload-Length"] == "1000")
        var part = ResumeToken.UploadPart(
            source: .init(path: "/a", size: 2000, mtime: 0, inode: 0, edgeHash: ""), wire: .undecided)
        m.record(into: &part)
        #expect(part.concat?.partials.map(\.url) == [nil, "http://h/files/p1"])
        #expect(part.concat?.partials.map(\.offset) == [0, 700])
    }

    @Test func aResumeWithAPartialNotYetCreatedAsksTheServerFirst() {
        let kept = ResumeToken.TusConcat(partials: [
            .init(start: 0, length: 1000, url: "http://h/files/p0", offset: 1000), .init(start: 1000, length: 1000),
        ])
        var m = TusConcatMachine(size: 2000, creationURL: endpoint, filename: "a.bin", concat: kept)
        #expect(m.plans(besides: []) == [.discover(headers: [:])])
        let noConcat = head(204, [("Tus-Version", "1.0.0"), ("Tus-Extension", "creation")])
        guard case .fail(let reason) = m.response(noConcat, to: m.plan()) else {
            Issue.record("a server without concatenation cannot finish partial uploads")
            return
        }
        #expect(reason.contains("concatenation"))

        var again = TusConcatMachine(size: 2000, creationURL: endpoint, filename: "a.bin", concat: kept)
        let offers = head(204, [("Tus-Version", "1.0.0"), ("Tus-Extension", "creation,concatenation")])
        #expect(again.response(offers, to: again.plan()) == .proceed)
        #expect(again.plans(besides: []).map { again.exchange(for: $0)?.method } == ["POST"])
    }

    @Test func theTokenKeepsEveryPartialAndTheFinalUploadAcrossRuns() throws {
        var m = fresh(size: 3000, count: 3)
        _ = create(&m, 0)
        _ = create(&m, 2)
        _ = finish(&m, 2)
        let source = ResumeToken.SourceIdentity(path: "/d/a.bin", size: 3000, mtime: 1, inode: 2, edgeHash: "")
        var part = ResumeToken.UploadPart(source: source, wire: .undecided)
        m.record(into: &part)
        #expect(part.uploadProtocol == .tus && part.acknowledgedBytes == 1000)
        let token = ResumeToken(
            id: "u-concat", url: endpoint, headers: [], transfer: .upload(part),
            now: Date(timeIntervalSince1970: 1_800_000_000))
        let decoded = try TokenStore.decode(Data(TokenStore.json(token).utf8), path: "x")
        #expect(decoded == token)
        let concat = try #require(decoded.upload?.concat)
        #expect(concat.partials.map(\.url) == ["http://h/files/p0", nil, "http://h/files/p2"])
        #expect(concat.partials.map(\.offset) == [0, 0, 1000])
        // The next run continues from the token: partial 0 is asked for its offset, partial 2 is left alone.
        let next = TusConcatMachine(
            size: 3000, creationURL: endpoint, filename: "a.bin", concat: concat, capabilities: concatenating)
        #expect(next.plans(besides: []).map { next.exchange(for: $0)?.method } == ["HEAD", "POST"])
        #expect(next.acknowledgedBytes == 1000)
    }

    @Test func tokensWithImpossiblePartialsAreRefused() throws {
        let source = ResumeToken.SourceIdentity(path: "/d/a.bin", size: 3000, mtime: 1, inode: 2, edgeHash: "")
        func violation(
            _ concat: ResumeToken.TusConcat, wire: ResumeToken.UploadPart.Wire = .tus(expires: nil, checksum: nil)
        )
            -> String?
        {
            var part = ResumeToken.UploadPart(source: source, wire: wire)
            part.concat = concat
            let token = ResumeToken(id: "u-x", url: endpoint, headers: [], transfer: .upload(part))
            do {
                _ = try TokenStore.decode(Data(TokenStore.json(token).utf8), path: "x")
                return nil
            } catch TokenStoreError.invalid(_, let violation) {
                return violation.field
            } catch {
                return "\(error)"
            }
        }
        #expect(violation(ResumeToken.TusConcat(size: 3000, count: 3)) == nil)
        #expect(violation(ResumeToken.TusConcat(size: 3000, count: 3), wire: .plain) == "upload.concat")
        let gap = ResumeToken.TusConcat(partials: [.init(start: 0, length: 1000), .init(start: 1500, length: 1500)])
        #expect(violation(gap) == "upload.concat.partials[1].start")
        let short = ResumeToken.TusConcat(partials: [.init(start: 0, length: 1000)])
        #expect(violation(short) == "upload.concat.partials")
        let beyond = ResumeToken.TusConcat(partials: [.init(start: 0, length: 3000, url: "http://h/p", offset: 3001)])
        #expect(violation(beyond) == "upload.concat.partials[0].offset")
        let notHTTP = ResumeToken.TusConcat(partials: [.init(start: 0, length: 3000, url: "file:///etc/passwd")])
        #expect(violation(notHTTP) == "upload.concat.partials[0].url")
    }
}
