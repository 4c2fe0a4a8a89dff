import Testing
@testable import ResumeKit

private let creation = "http://h/files/a.bin"
private let resource = "http://h/resumable_upload/1-2"

@Suite struct IETFStateMachineTests {
    @Test(arguments: InteropVersion.allCases)
    func creationSendsTheWholeFileMarkedComplete(version: InteropVersion) {
        let m = IETFStateMachine(size: 1000, version: version)
        guard case .create(let headers, let length, let complete) = m.plan() else {
            Issue.record("expected a creation")
            return
        }
        #expect(length == 1000 && complete)
        #expect(headers[InteropVersion.header] == String(version.rawValue))
        if version == .v3 {
            #expect(headers["Upload-Incomplete"] == "?0")
        } else {
            #expect(headers["Upload-Complete"] == "?1")
        }
        #expect((headers["Upload-Length"] != nil) == (version.rawValue >= 6))
    }

    @Test(arguments: [InteropVersion.v3, .v5, .v6])
    func completedInOneGo(version: InteropVersion) {
        var m = IETFStateMachine(size: 1000, version: version)
        #expect(
            m.informational(
                head(104, [(InteropVersion.header, "\(version.rawValue)"), ("Location", resource)]),
                requestURL: creation) == .uploadURL(resource))
        // NIO's final response names the completion field of the other version; only the 2xx counts.
        let final = head(201, [("Upload-Incomplete", "?0"), ("Upload-Offset", "1000")])
        #expect(m.response(final, to: m.plan()) == .completed)
    }

    @Test func interruptedAfterThe104AsksForTheOffsetThenAppends() {
        var m = IETFStateMachine(size: 1000, version: .v6)
        let plan = m.plan()
        _ = m.informational(
            head(104, [(InteropVersion.header, "6"), ("Location", "/resumable_upload/1-2")]), requestURL: creation)
        #expect(
            m.exchangeFailed("connection reset", during: plan) == .retry(reason: "connection reset", retryAfter: nil))
        #expect(m.plan() == .queryOffset(url: resource, headers: [InteropVersion.header: "6"]))
        #expect(m.response(head(204, [("Upload-Offset", "400"), ("Upload-Complete", "?0")]), to: m.plan()) == .proceed)
        guard case .append(let url, let headers, let offset, let length, let complete) = m.plan() else {
            Issue.record("expected an append")
            return
        }
        #expect(url == resource && offset == 400 && length == 600 && complete)
        #expect(headers["Upload-Offset"] == "400")
        #expect(headers["Content-Type"] == "application/partial-upload")
        #expect(headers["Upload-Complete"] == "?1")
        #expect(m.response(head(201, [("Upload-Offset", "1000")]), to: m.plan()) == .completed)
    }

    @Test func a104OfAnotherVersionIsIgnored() {
        var m = IETFStateMachine(size: 10, version: .v6)
        #expect(
            m.informational(head(104, [(InteropVersion.header, "3"), ("Location", resource)]), requestURL: creation)
                == .nothing)
        #expect(!m.serverSupportsDraft)
    }

    @Test func conflictAsksForTheOffsetAgain() {
        var m = IETFStateMachine(size: 1000, version: .v6, uploadURL: resource)
        _ = m.response(head(204, [("Upload-Offset", "100")]), to: m.plan())
        #expect(
            m.response(head(409, [("Upload-Offset", "300")]), to: m.plan())
                == .step(reason: "the server has another offset"))
        #expect(m.plan() == .queryOffset(url: resource, headers: [InteropVersion.header: "6"]))
    }

    @Test(arguments: [404, 410])
    func goneUploadIsCreatedAnew(status: Int) {
        var m = IETFStateMachine(size: 1000, version: .v6, uploadURL: resource)
        #expect(m.response(head(status), to: m.plan()) == .restarted(reason: "the server no longer has the upload"))
        guard case .create = m.plan() else {
            Issue.record("expected a new creation")
            return
        }
    }

    @Test func badRequestNamingAnotherVersionSwitchesOnce() {
        var m = IETFStateMachine(size: 1000, version: .v8)
        #expect(
            m.response(head(400, [(InteropVersion.header, "6")]), to: m.plan())
                == .step(reason: "the server speaks draft interop version 6; switching"))
        #expect(m.version == .v6)
        guard case .fail = m.response(head(400, [(InteropVersion.header, "5")]), to: m.plan()) else {
            Issue.record("a second switch must fail")
            return
        }
    }

    @Test func pinnedVersionNeverSwitches() {
        var m = IETFStateMachine(size: 1000, version: .v8, versionPinned: true)
        guard case .fail = m.response(head(400, [(InteropVersion.header, "6")]), to: m.plan()) else {
            Issue.record("expected a failure")
            return
        }
    }

    @Test func noDraftSupportRetriesTheWholeRequest() {
        var m = IETFStateMachine(size: 1000, version: .v6)
        let d = m.exchangeFailed("connection reset", during: m.plan())
        #expect(
            d
                == .retry(
                    reason: "connection reset; the server cannot resume uploads, so the whole file is sent again",
                    retryAfter: nil))
        guard case .create(_, 1000, true) = m.plan() else {
            Issue.record("expected the whole creation again")
            return
        }
    }

    @Test func plainServerCompletes() {
        var m = IETFStateMachine(size: 1000, version: .v6)
        #expect(m.response(head(201), to: m.plan()) == .completed)
    }

    @Test func offsetBeyondTheFileFails() {
        var m = IETFStateMachine(size: 1000, version: .v6, uploadURL: resource)
        #expect(
            m.response(head(204, [("Upload-Offset", "2000")]), to: m.plan())
                == .fail(reason: "the server holds 2000 bytes, more than the file's 1000"))
    }

    @Test func uploadLimitSplitsAppends() {
        var m = IETFStateMachine(size: 1000, version: .v8)
        _ = m.informational(
            head(104, [(InteropVersion.header, "8"), ("Location", resource), ("Upload-Limit", "max-append-size=300")]),
            requestURL: creation)
        #expect(m.maxAppendSize == 300)
        _ = m.exchangeFailed("reset", during: m.plan())
        _ = m.response(head(204, [("Upload-Offset", "0")]), to: m.plan())
        guard case .append(_, let h, 0, 300, false) = m.plan() else {
            Issue.record("expected a 300-byte append")
            return
        }
        #expect(h["Upload-Complete"] == "?0")
        #expect(m.response(head(204), to: m.plan()) == .proceed)
        guard case .append(_, _, 300, 300, false) = m.plan() else {
            Issue.record("expected the next append")
            return
        }
        #expect(IETFStateMachine.maxSize(head(104, [("Upload-Limit", "max-size=10")])) == 10)
    }

    @Test func chunkSizeOnlyChunksOnceSupportIsKnown() {
        var m = IETFStateMachine(size: 1000, version: .v6, chunkSize: 100)
        guard case .create(_, 1000, true) = m.plan() else {
            Issue.record("an unknown server gets the whole file")
            return
        }
        let sent = m.plan()
        _ = m.informational(head(104, [(InteropVersion.header, "6"), ("Location", resource)]), requestURL: creation)
        #expect(m.response(head(201, [("Upload-Offset", "1000")]), to: sent) == .completed)
    }

    @Test func serverTroubleDuringAppendAsksForTheOffset() {
        var m = IETFStateMachine(size: 1000, version: .v6, uploadURL: resource)
        _ = m.response(head(204, [("Upload-Offset", "0")]), to: m.plan())
        #expect(
            m.response(head(503, [("Retry-After", "2")]), to: m.plan())
                == .retry(reason: "the server answered 503 while appending", retryAfter: "2"))
        #expect(m.plan() == .queryOffset(url: resource, headers: [InteropVersion.header: "6"]))
    }

    @Test func headSayingCompleteFinishes() {
        var m = IETFStateMachine(size: 1000, version: .v3, uploadURL: resource)
        #expect(
            m.response(head(204, [("Upload-Offset", "1000"), ("Upload-Incomplete", "?0")]), to: m.plan()) == .completed)
    }

    // MARK: Interop 9 (draft -12)

    /// A v9 machine appending to `resource` from `offset`.
    private func appending(from offset: Int64, size: Int64 = 1000) -> IETFStateMachine {
        var m = IETFStateMachine(size: size, version: .v9, uploadURL: resource)
        _ = m.response(head(204, [("Upload-Offset", "\(offset)"), ("Upload-Complete", "?0")]), to: m.plan())
        return m
    }

    @Test func newestIsInterop9() {
        #expect(InteropVersion.newest == .v9 && ProtocolProbe.requestHeaders[InteropVersion.header] == "9")
    }

    @Test func anErrorSayingCompleteIsTheResourcesOwnAndNotResumed() {
        var m = appending(from: 0)
        guard case .fail(let reason) = m.response(head(500, [("Upload-Complete", "?1")]), to: m.plan()) else {
            Issue.record("resumed after the resource's own answer")
            return
        }
        #expect(reason.contains("500"))
        var same = appending(from: 0)
        #expect(
            same.response(head(500, [("Upload-Complete", "?0")]), to: same.plan())
                == .retry(reason: "the server answered 500 while appending", retryAfter: nil))
        // Before 9 the field on an error means nothing: retried as ever.
        var old = IETFStateMachine(size: 1000, version: .v8, uploadURL: resource)
        _ = old.response(head(204, [("Upload-Offset", "0")]), to: old.plan())
        #expect(
            old.response(head(500, [("Upload-Complete", "?1")]), to: old.plan())
                == .retry(reason: "the server answered 500 while appending", retryAfter: nil))
    }

    @Test func a413WithALimitMakesAppendsSmaller() {
        var m = appending(from: 200)
        #expect(
            m.response(head(413, [("Upload-Limit", "max-append-size=300")]), to: m.plan())
                == .step(reason: "the server takes appends of at most 300 bytes"))
        #expect(m.plan() == .queryOffset(url: resource, headers: [InteropVersion.header: "9"]))
        _ = m.response(head(204, [("Upload-Offset", "200"), ("Upload-Complete", "?0")]), to: m.plan())
        guard case .append(_, _, 200, 300, false) = m.plan() else {
            Issue.record("expected a 300-byte append, got \(m.plan())")
            return
        }
    }

    @Test func a413WithoutLimitsAsksForThemWithOptions() {
        var m = appending(from: 0)
        #expect(
            m.response(head(413), to: m.plan())
                == .step(reason: "the server refused 1000 bytes as too large; asking for its limits"))
        let ask = m.plan()
        #expect(ask == .queryLimits(url: resource, headers: [InteropVersion.header: "9"]))
        #expect(m.exchange(for: ask)?.method == "OPTIONS")
        #expect(
            m.response(head(200, [("Upload-Limit", "min-size=0, max-append-size=250")]), to: ask)
                == .step(reason: "the server takes appends of at most 250 bytes"))
        _ = m.response(head(204, [("Upload-Offset", "0"), ("Upload-Complete", "?0")]), to: m.plan())
        guard case .append(_, _, 0, 250, false) = m.plan() else {
            Issue.record("expected a 250-byte append, got \(m.plan())")
            return
        }
        // Limits that allow no smaller append end the upload instead of a loop.
        var n = appending(from: 0)
        _ = n.response(head(413), to: n.plan())
        guard case .fail = n.response(head(200, [("Upload-Limit", "min-size=0")]), to: n.plan()) else {
            Issue.record("no smaller append named, yet not failed")
            return
        }
        var o = appending(from: 0)
        guard case .fail = o.response(head(413, [("Upload-Limit", "max-append-size=5000")]), to: o.plan()) else {
            Issue.record("a limit above the refused append, yet not failed")
            return
        }
    }

    @Test func a413OnCreationOverTheMaximumFails() {
        var m = IETFStateMachine(size: 1000, version: .v9)
        #expect(
            m.response(head(413, [("Upload-Limit", "max-size=500")]), to: m.plan())
                == .fail(reason: "the server takes uploads of at most 500 bytes; this one has 1000"))
    }

    @Test func twoURLsForOneUploadCancelIt() {
        var m = IETFStateMachine(size: 1000, version: .v9)
        let create = m.plan()
        _ = m.informational(head(104, [(InteropVersion.header, "9"), ("Location", resource)]), requestURL: creation)
        let other = head(201, [("Location", "/resumable_upload/9-9"), ("Upload-Complete", "?1")])
        #expect(m.response(other, to: create) == .step(reason: "the server named two URLs for one upload"))
        let cancel = m.plan()
        guard case .cancel(let url, _, _) = cancel else {
            Issue.record("expected a cancel, got \(cancel)")
            return
        }
        #expect(url == resource && m.exchange(for: cancel)?.method == "DELETE")
        guard case .fail(let reason) = m.response(head(204), to: cancel) else {
            Issue.record("not failed after the cancel")
            return
        }
        #expect(reason.contains("two URLs"))
        // The same URL twice is the normal case.
        var n = IETFStateMachine(size: 1000, version: .v9)
        let first = n.plan()
        _ = n.informational(
            head(104, [(InteropVersion.header, "9"), ("Location", "/resumable_upload/1-2")]), requestURL: creation)
        #expect(
            n.response(head(201, [("Location", "/resumable_upload/1-2"), ("Upload-Complete", "?1")]), to: first)
                == .completed)
    }

    @Test func anOffsetBeyondWhatWasSentIsTakenWhenTheFileHasIt() {
        var m = appending(from: 0)
        _ = m.response(head(413, [("Upload-Limit", "max-append-size=400")]), to: m.plan())
        _ = m.response(head(204, [("Upload-Offset", "0"), ("Upload-Complete", "?0")]), to: m.plan())
        let first = m.plan()
        #expect(
            m.response(head(204, [("Upload-Offset", "600"), ("Upload-Complete", "?0")]), to: first)
                == .step(reason: "the server acknowledged 600, not 400"))
        _ = m.response(head(204, [("Upload-Offset", "600"), ("Upload-Complete", "?0")]), to: m.plan())
        guard case .append(_, _, 600, 400, true) = m.plan() else {
            Issue.record("expected the rest from 600, got \(m.plan())")
            return
        }
        var old = IETFStateMachine(size: 1000, version: .v8, uploadURL: resource, chunkSize: 400)
        _ = old.response(head(204, [("Upload-Offset", "0")]), to: old.plan())
        #expect(
            old.response(head(204, [("Upload-Offset", "600")]), to: old.plan())
                == .fail(reason: "the server acknowledged 600 bytes, more than the 400 sent"))
    }
}
