import Testing
@testable import ResumeKit

/// Answers that cannot be true fail the attempt (download) or stop the upload, never count as done (issue 22).
@Suite struct ImpossibleAnswerTests {
    @Test(arguments: [
        ("99999999999999999999999", false), ("-5", false), ("+5", false), ("5 5", false), ("0x10", false), ("", false),
        ("1000", true), ("0", true), ("9223372036854775807", true), ("9223372036854775808", false),
    ])
    func contentLengthIsDigitsThatFit(value: String, usable: Bool) {
        let parsed = ContentLength(["Content-Length": value])
        #expect((parsed.value != nil) == usable)
        if !usable, case .invalid = parsed {} else if !usable { Issue.record("\(value) was not refused: \(parsed)") }
    }

    @Test func twoLengthsThatDifferAreRefusedAndEqualCopiesAccepted() {
        #expect(
            ContentLength(
                HeaderFields([.init(name: "Content-Length", value: "10"), .init(name: "content-length", value: "11")]))
                == .invalid("the server declared two lengths, 10 and 11"))
        #expect(ContentLength(["Content-Length": "10, 10"]) == .length(10))
        #expect(ContentLength(["Content-Length": "10, 12"]) == .invalid("the server declared two lengths, 10 and 12"))
        // Chunked framing overrides a length (RFC 9112 §6.3); libcurl reads the chunks.
        #expect(ContentLength(["Content-Length": "oops", "Transfer-Encoding": "chunked"]) == .absent)
    }

    /// The finding: 10^23 bytes declared, libcurl drops the length, 1,000 bytes and a close looked complete.
    @Test func undeclarableLengthIsAFailedAttemptNotAFile() {
        var m = DownloadStateMachine()
        let d = m.evaluate(
            head(200, [("Content-Length", "99999999999999999999999"), ("ETag", "\"a\"")]), requestedOffset: 0)
        #expect(d == .malformed("the server declared an unusable Content-Length '99999999999999999999999'"))
        #expect(m.resource == nil)
    }

    @Test func negativeLengthIsNotATotal() {
        var m = DownloadStateMachine()
        guard case .malformed = m.evaluate(head(200, [("Content-Length", "-1000")]), requestedOffset: 0) else {
            Issue.record("a negative Content-Length was accepted")
            return
        }
    }

    @Test func partialWhoseLengthContradictsItsRange() {
        var m = DownloadStateMachine()
        let d = m.evaluate(
            head(206, [("Content-Range", "bytes 0-999/1000"), ("Content-Length", "10")]), requestedOffset: 0)
        #expect(d == .malformed("the server's Content-Length 10 contradicts its Content-Range 0-999"))
        var ok = DownloadStateMachine()
        #expect(
            ok.evaluate(
                head(206, [("Content-Range", "bytes 0-999/1000"), ("Content-Length", "1000")]), requestedOffset: 0)
                == .write(from: 0, restarted: nil))
    }

    /// A range ending at Int64.max with an unknown total parses; checking it against a length must not overflow.
    @Test func rangeEndingAtTheLargestOffset() {
        var m = DownloadStateMachine()
        let d = m.evaluate(
            head(206, [("Content-Range", "bytes 0-9223372036854775807/*"), ("Content-Length", "10")]),
            requestedOffset: 0)
        guard case .malformed = d else {
            Issue.record("expected a refusal, got \(d)")
            return
        }
    }

    @Test(arguments: [
        "bytes 0-9223372036854775807/9223372036854775807", "bytes 5-1/10", "bytes 0-10/10", "bytes -1-5/10",
        "bytes 0-99999999999999999999/1", "bytes */*", "bytes 0-1/-2",
    ])
    func impossibleContentRangesParseToNothing(value: String) {
        #expect(ContentRange(value)?.range == nil)
    }

    // MARK: IETF

    /// The finding: a complete POST answered 201 + `Upload-Complete: ?0` + an offset beyond the file.
    @Test func ietfOffsetBeyondTheFileIsNotSuccess() {
        var m = IETFStateMachine(size: 1000, version: .v8)
        let answer = head(201, [("Upload-Complete", "?0"), ("Upload-Offset", "99999999999999999999")])
        guard case .fail(let reason) = m.response(answer, to: m.plan()) else {
            Issue.record("taken as success")
            return
        }
        #expect(reason.contains("not a byte count"))
        var n = IETFStateMachine(size: 1000, version: .v8)
        #expect(
            n.response(head(201, [("Upload-Offset", "5000")]), to: n.plan())
                == .fail(reason: "the server acknowledged 5000 bytes, more than the 1000 sent"))
    }

    @Test(arguments: [InteropVersion.v5, .v6, .v8])
    func ietfIncompleteFlagWithAFullOffsetContradictsItself(version: InteropVersion) {
        var m = IETFStateMachine(size: 1000, version: version)
        #expect(
            m.response(head(201, [("Upload-Complete", "?0"), ("Upload-Offset", "1000")]), to: m.plan())
                == .fail(
                    reason: "the server answered the last request with Upload-Complete: ?0, so the upload is not done"))
    }

    @Test func ietfV3IncompleteFlagContradictsToo() {
        var m = IETFStateMachine(size: 1000, version: .v3)
        #expect(
            m.response(head(201, [("Upload-Incomplete", "?1")]), to: m.plan())
                == .fail(
                    reason: "the server answered the last request with Upload-Incomplete: ?1, so the upload is not done"
                ))
    }

    @Test func ietfAppendAcknowledgingMoreThanSentStops() {
        var m = IETFStateMachine(size: 1000, version: .v6, uploadURL: "http://h/u/1")
        #expect(m.response(head(204, [("Upload-Offset", "400"), ("Upload-Complete", "?0")]), to: m.plan()) == .proceed)
        #expect(
            m.response(head(201, [("Upload-Offset", "1400")]), to: m.plan())
                == .fail(reason: "the server acknowledged 1400 bytes, more than the 1000 sent"))
    }

    @Test func ietfCreationOfAPieceAcknowledgingMoreThanItCarried() {
        var m = IETFStateMachine(size: 10_000, version: .v8, chunkSize: 1000)
        _ = m.informational(
            head(104, [(InteropVersion.header, "8"), ("Location", "http://h/u/1")]), requestURL: "http://h/f")
        // The first creation of a known server sends a piece; a fresh machine sends the whole file.
        let plan = m.plan()
        guard case .create(_, let length, false) = plan else {
            Issue.record("expected a partial creation, got \(plan)")
            return
        }
        #expect(
            m.response(
                head(
                    201, [("Location", "http://h/u/1"), ("Upload-Complete", "?0"), ("Upload-Offset", "\(length + 1)")]),
                to: plan)
                == .fail(reason: "the server acknowledged \(length + 1) bytes of a creation that carried \(length)"))
    }

    @Test func ietfNIOFinalResponseStillCompletes() {
        for version in [InteropVersion.v3, .v5, .v6] {
            var m = IETFStateMachine(size: 1000, version: version)
            let swapped = version == .v3 ? ("Upload-Complete", "?1") : ("Upload-Incomplete", "?0")
            #expect(m.response(head(201, [swapped, ("Upload-Offset", "1000")]), to: m.plan()) == .completed)
        }
    }

    // MARK: tus

    @Test func tusAppendAcknowledgingMoreThanSentStops() {
        var m = TusStateMachine(
            size: 1000, creationURL: "http://h/files/", filename: "a", uploadURL: "http://h/files/x")
        #expect(m.response(head(200, [("Upload-Offset", "100")]), to: m.plan()) == .proceed)
        #expect(
            m.response(head(204, [("Upload-Offset", "5000")]), to: m.plan())
                == .fail(reason: "the server acknowledged 5000 bytes, more than the 1000 sent"))
    }

    @Test func tusCreationAcknowledgingMoreThanItCarried() {
        var m = TusStateMachine(
            size: 1_000_000, creationURL: "http://h/files/", filename: "a",
            capabilities: TusCapabilities(extensions: ["creation", "creation-with-upload"]))
        let plan = m.plan()
        guard case .create(_, let length, _) = plan, length > 0 else {
            Issue.record("expected a creation with upload, got \(plan)")
            return
        }
        #expect(
            m.response(head(201, [("Location", "http://h/files/x"), ("Upload-Offset", "\(length + 1)")]), to: plan)
                == .fail(reason: "the server acknowledged \(length + 1) bytes of a creation that carried \(length)"))
    }

    @Test(arguments: ["-1", "+5", "1e3", "99999999999999999999"])
    func tusOffsetThatIsNoByteCount(value: String) {
        var m = TusStateMachine(
            size: 1000, creationURL: "http://h/files/", filename: "a", uploadURL: "http://h/files/x")
        #expect(
            m.response(head(200, [("Upload-Offset", value)]), to: m.plan())
                == .fail(reason: "the server's answer carries no usable Upload-Offset"))
    }
}
