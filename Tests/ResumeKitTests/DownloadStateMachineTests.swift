import Testing
@testable import ResumeKit

private let etag = "\"6b02462e-40000000\""
private let stored = DownloadStateMachine.Resource(etag: etag, validator: etag, totalBytes: 1000)

@Suite struct DownloadStateMachineTests {
    @Test func firstRequestIsPlainGet() {
        #expect(DownloadStateMachine().plan(committed: 0) == .fetch(offset: 0, headers: [:]))
    }

    @Test func resumeSendsRangeAndIfRangeWithAnOverlap() {
        // The overlap is all the bytes held when they are fewer than 64 KiB: the range then starts at zero.
        let m = DownloadStateMachine(resource: stored)
        #expect(m.plan(committed: 400) == .fetch(offset: 0, headers: ["Range": "bytes=0-", "If-Range": etag]))
        let big = DownloadStateMachine(resource: .init(etag: etag, validator: etag, totalBytes: 1 << 30))
        let from = (1 << 20) - (64 << 10)
        #expect(
            big.plan(committed: 1 << 20)
                == .fetch(offset: Int64(from), headers: ["Range": "bytes=\(from)-", "If-Range": etag]))
        // Everything held: the last 64 KiB are asked again, and their comparison is the check that the file is whole.
        #expect(
            big.plan(committed: 1 << 30)
                == .fetch(
                    offset: (1 << 30) - (64 << 10),
                    headers: ["Range": "bytes=\((1 << 30) - (64 << 10))-", "If-Range": etag]))
        #expect(DownloadStateMachine.overlapStart(committed: 10) == 0)
    }

    @Test func overlapThatDiffersIsAChangedFile() {
        var restart = DownloadStateMachine(resource: stored)
        guard case .refetchFromZero(let reason) = restart.overlapDiffers(at: 100) else {
            Issue.record("expected a refetch")
            return
        }
        #expect(reason.contains("differ"))
        #expect(restart.resource == nil)
        var fail = DownloadStateMachine(resource: stored, onChange: .fail)
        guard case .fail(.changed) = fail.overlapDiffers(at: 100) else {
            Issue.record("expected a failure under --on-change fail")
            return
        }
    }

    @Test func verdictJoinsTheExchangeWithTheHeadsDecision() {
        let m = DownloadStateMachine(resource: stored)
        let write = DownloadStateMachine.Decision.write(from: 0, restarted: nil)
        #expect(m.verdict(.completed, write, held: 1000, stallTimeout: 30) == .done)
        #expect(
            m.verdict(.completed, write, held: 600, stallTimeout: 30)
                == .fault(.lost("the connection closed at byte 600 of 1000")))
        #expect(m.verdict(.abortedByDelegate, write, held: 600, stallTimeout: 30) == .again)
        #expect(m.verdict(.cancelled, nil, held: 0, stallTimeout: 30) == .again)
        #expect(m.verdict(.stalled, write, held: 10, stallTimeout: 7) == .fault(.stalled(seconds: 7)))
        #expect(
            m.verdict(.completed, .retry(status: 503, retryAfter: "2"), held: 0, stallTimeout: 30)
                == .fault(.answered(503, retryAfter: "2")))
        #expect(
            m.verdict(.completed, .malformed("two lengths"), held: 0, stallTimeout: 30) == .fault(.lost("two lengths")))
        #expect(
            m.verdict(.completed, .fail(.status(404, reason: "Not Found")), held: 0, stallTimeout: 30)
                == .fail(.status(404, reason: "Not Found")))
        #expect(m.verdict(.completed, nil, held: 0, stallTimeout: 30) == .fault(.lost("the server sent no response")))
        let refused = TransportFailure(kind: .network, code: 7, message: "Connection refused", unreachable: true)
        #expect(
            m.verdict(.failed(refused), nil, held: 0, stallTimeout: 30) == .fault(.unreachable("Connection refused")))
    }

    @Test func firstResponseStoresStrongValidatorAndLength() {
        var m = DownloadStateMachine()
        let d = m.evaluate(head(200, [("ETag", etag), ("Content-Length", "1000")]), requestedOffset: 0)
        #expect(d == .write(from: 0, restarted: nil))
        #expect(m.resource?.validator == etag)
        #expect(m.resource?.totalBytes == 1000)
    }

    @Test func partialFromTheRightStartAppends() {
        var m = DownloadStateMachine(resource: stored)
        let d = m.evaluate(head(206, [("Content-Range", "bytes 400-999/1000"), ("ETag", etag)]), requestedOffset: 400)
        #expect(d == .write(from: 400, restarted: nil))
    }

    @Test func partialFromTheWrongStartIsRefetched() {
        var m = DownloadStateMachine(resource: stored)
        let d = m.evaluate(head(206, [("Content-Range", "bytes 300-999/1000")]), requestedOffset: 400)
        #expect(d == .refetchFromZero(reason: "the server answered from byte 300, not 400"))
    }

    @Test func partialWithAnotherTotalMeansChanged() {
        var m = DownloadStateMachine(resource: stored)
        let d = m.evaluate(head(206, [("Content-Range", "bytes 400-1199/1200")]), requestedOffset: 400)
        #expect(d == .refetchFromZero(reason: "the file on the server has another length now"))
        #expect(m.resource == nil)
    }

    @Test func partialWithAnotherETagMeansChanged() {
        var m = DownloadStateMachine(resource: stored)
        let d = m.evaluate(
            head(206, [("Content-Range", "bytes 400-999/1000"), ("ETag", "\"other\"")]), requestedOffset: 400)
        #expect(d == .refetchFromZero(reason: "the file changed on the server"))
    }

    @Test func fullResponseAfterIfRangeRestartsWithTheNewFile() {
        var m = DownloadStateMachine(resource: stored)
        let d = m.evaluate(head(200, [("ETag", "\"new\""), ("Content-Length", "1200")]), requestedOffset: 400)
        #expect(d == .write(from: 0, restarted: "the file changed on the server"))
        #expect(m.resource?.validator == "\"new\"")
        #expect(m.resource?.totalBytes == 1200)
    }

    @Test func fullResponseWithTheSameETagMeansRangesUnsupported() {
        var m = DownloadStateMachine(resource: stored)
        let d = m.evaluate(head(200, [("ETag", etag), ("Content-Length", "1000")]), requestedOffset: 400)
        #expect(d == .write(from: 0, restarted: "the server ignored the range request"))
    }

    @Test func changedFileFailsWhenAsked() {
        var m = DownloadStateMachine(resource: stored, onChange: .fail)
        let d = m.evaluate(head(200, [("ETag", "\"new\"")]), requestedOffset: 400)
        #expect(d == .fail(.changed("the file changed on the server")))
    }

    @Test func unsatisfiableOverlapMeansTheFileShrank() {
        var m = DownloadStateMachine(resource: stored)
        #expect(
            m.evaluate(head(416, [("Content-Range", "bytes */100")]), requestedOffset: 936)
                == .refetchFromZero(reason: "the file on the server has another length now"))
    }

    @Test func unsatisfiableRangeWithAnotherLengthRestarts() {
        var m = DownloadStateMachine(resource: stored)
        #expect(
            m.evaluate(head(416, [("Content-Range", "bytes */500")]), requestedOffset: 1000)
                == .refetchFromZero(reason: "the file on the server has another length now"))
    }

    @Test func weakETagGivesNoValidatorSoResumeRestarts() {
        var m = DownloadStateMachine()
        _ = m.evaluate(head(200, [("ETag", "W/\"abc\""), ("Content-Length", "1000")]), requestedOffset: 0)
        #expect(m.resource?.validator == nil)
        #expect(m.plan(committed: 500) == .fetch(offset: 0, headers: [:]))
    }

    @Test func noValidatorWithFailPolicyFails() {
        let m = DownloadStateMachine(resource: .init(totalBytes: 1000), onChange: .fail)
        guard case .fail(.changed) = m.plan(committed: 500) else {
            Issue.record("expected a failure")
            return
        }
    }

    @Test func noValidatorThenFullResponseSaysWhy() {
        var m = DownloadStateMachine(resource: .init(totalBytes: 1000))
        let d = m.evaluate(head(200, [("Content-Length", "1000")]), requestedOffset: 0)
        #expect(d == .write(from: 0, restarted: nil))
    }

    @Test func strongLastModifiedIsUsedWithoutETag() {
        var m = DownloadStateMachine()
        _ = m.evaluate(
            head(200, [("Last-Modified", "Sun, 22 Nov 2026 01:00:00 GMT"), ("Date", "Sun, 22 Nov 2026 02:00:00 GMT")]),
            requestedOffset: 0)
        #expect(m.resource?.validator == "Sun, 22 Nov 2026 01:00:00 GMT")
    }

    @Test func lastModifiedTooCloseToDateIsWeak() {
        var m = DownloadStateMachine()
        _ = m.evaluate(
            head(200, [("Last-Modified", "Sun, 22 Nov 2026 01:00:00 GMT"), ("Date", "Sun, 22 Nov 2026 01:00:00 GMT")]),
            requestedOffset: 0)
        #expect(m.resource?.validator == nil)
    }

    @Test func encodedBodiesAreNotResumable() {
        var m = DownloadStateMachine()
        _ = m.evaluate(head(200, [("ETag", etag), ("Content-Encoding", "gzip")]), requestedOffset: 0)
        #expect(m.resource?.validator == nil)
    }

    @Test(arguments: [408, 429, 500, 502, 503, 504])
    func transientStatusesAreRetried(status: Int) {
        var m = DownloadStateMachine(resource: stored)
        #expect(
            m.evaluate(head(status, [("Retry-After", "3")]), requestedOffset: 400)
                == .retry(status: status, retryAfter: "3"))
    }

    @Test(arguments: [400, 401, 403, 404, 410, 501])
    func finalStatusesFail(status: Int) {
        var m = DownloadStateMachine()
        guard case .fail(.status(status, _)) = m.evaluate(head(status), requestedOffset: 0) else {
            Issue.record("expected .fail for \(status)")
            return
        }
    }

    @Test func reprDigestIsKept() {
        var m = DownloadStateMachine()
        _ = m.evaluate(
            head(200, [("Repr-Digest", "sha-256=:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=:")]), requestedOffset: 0)
        #expect(m.resource?.reprDigestSHA256 == Array(0..<32))
    }
}

@Suite struct SegmentRulesTests {
    private let resource = DownloadStateMachine.Resource(etag: "\"e\"", validator: "\"e\"", totalBytes: 10_000_000)

    @Test func splitCoversEveryByteOnce() {
        let segments = SegmentRules.split(total: 10_000_001, connections: 4)
        #expect(segments.count == 4)
        #expect(segments.first?.start == 0 && segments.last?.end == 10_000_000)
        for (a, b) in zip(segments, segments.dropFirst()) { #expect(a.end + 1 == b.start) }
        #expect(SegmentRules.split(total: 1_500_000, connections: 8).count == 1)
    }

    @Test func exactPartIsWritten() {
        var m = DownloadStateMachine(resource: resource, onChange: .fail)
        #expect(
            m.evaluate(
                head(206, [("Content-Range", "bytes 100-199/10000000"), ("ETag", "\"e\"")]), requestedOffset: 100,
                through: 199)
                == .write(from: 100, restarted: nil))
        #expect(
            m.verdict(.completed, .write(from: 100, restarted: nil), held: 100, expected: 100, stallTimeout: 30)
                == .done)
        #expect(
            m.verdict(.completed, .write(from: 100, restarted: nil), held: 60, expected: 100, stallTimeout: 30)
                == .fault(.lost("the connection closed at byte 60 of 100")))
    }

    @Test func anythingElseVoidsTheSegments() {
        var m = DownloadStateMachine(resource: resource, onChange: .fail)
        #expect(
            m.evaluate(head(200), requestedOffset: 0, through: 199) == .fail(.changed("the file changed on the server"))
        )
        #expect(
            m.evaluate(head(206, [("Content-Range", "bytes 100-299/10000000")]), requestedOffset: 100, through: 199)
                == .fail(.changed("the server answered bytes 100-299, not 100-199")))
        #expect(
            m.evaluate(head(206, [("Content-Range", "bytes 0-199/10000000")]), requestedOffset: 0, through: 199)
                == .write(from: 0, restarted: nil))
        #expect(
            m.evaluate(head(206, [("Content-Range", "bytes 100-199/20000000")]), requestedOffset: 100, through: 199)
                == .fail(.changed("the file on the server has another length now")))
        #expect(
            m.evaluate(head(416), requestedOffset: 0, through: 199)
                == .fail(.changed("the file on the server has another length now")))
        #expect(
            m.evaluate(head(503, [("Retry-After", "1")]), requestedOffset: 0, through: 1)
                == .retry(status: 503, retryAfter: "1"))
        #expect(m.resource == resource)
    }

    @Test func probeNeedsRangesValidatorAndLength() {
        let ok = head(200, [("Accept-Ranges", "bytes"), ("ETag", "\"e\""), ("Content-Length", "10")])
        #expect((try? SegmentRules.probe(ok).get())?.totalBytes == 10)
        #expect(throws: SegmentRules.Refusal.noRanges) {
            try SegmentRules.probe(head(200, [("ETag", "\"e\""), ("Content-Length", "10")])).get()
        }
        #expect(throws: SegmentRules.Refusal.noValidator) {
            try SegmentRules.probe(
                head(200, [("Accept-Ranges", "bytes"), ("ETag", "W/\"e\""), ("Content-Length", "10")])
            ).get()
        }
        #expect(throws: SegmentRules.Refusal.unknownLength) {
            try SegmentRules.probe(head(200, [("Accept-Ranges", "bytes"), ("ETag", "\"e\"")])).get()
        }
    }

    @Test func listParsing() {
        let list = DownloadList(
            parsing: "# c\n\nhttp://h/a\nhttp://h/b  b2.bin\nhttp://h/a\nftp://h/c\nhttp://h/d ../x\n")
        #expect(
            list.entries == [
                .init(line: 3, url: "http://h/a", name: nil), .init(line: 4, url: "http://h/b", name: "b2.bin"),
            ])
        #expect(list.duplicates == [5])
        #expect(list.problems.map(\.line) == [6, 7])
    }
}
