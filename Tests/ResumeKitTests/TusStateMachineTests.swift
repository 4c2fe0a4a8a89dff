import Testing
@testable import ResumeKit

private let endpoint = "http://h/files/"
private let resource = "http://h/files/abc"
private let tuspy = head(
    204,
    [
        ("Tus-Version", "1.0.0"), ("Tus-Resumable", "1.0.0"),
        ("Tus-Extension", "creation,creation-defer-length,creation-with-upload,expiration,termination,concatenation"),
        ("Tus-Max-Size", "128849018880"),
    ])

@Suite struct TusStateMachineTests {
    @Test func discoversThenCreatesWithLengthAndMetadata() {
        var m = TusStateMachine(size: 1000, creationURL: endpoint, filename: "a.bin")
        #expect(m.plan() == .discover(headers: [:]))
        #expect(m.exchange(for: m.plan())?.method == "OPTIONS")
        #expect(m.response(tuspy, to: m.plan()) == .proceed)
        guard case .create(let headers, let length, let checksum) = m.plan() else {
            Issue.record("expected a creation, got \(m.plan())")
            return
        }
        #expect(headers["Tus-Resumable"] == "1.0.0")
        #expect(headers["Upload-Length"] == "1000")
        // base64("a.bin"), base64("application/octet-stream"): tuspyserver refuses a HEAD without filetype.
        #expect(headers["Upload-Metadata"] == "filename YS5iaW4=,filetype YXBwbGljYXRpb24vb2N0ZXQtc3RyZWFt")
        // creation-with-upload: a small file rides in the POST whole.
        #expect(length == 1000 && checksum == nil)
        #expect(headers["Content-Type"] == TusStateMachine.patchContentType)
    }

    @Test func creationWithUploadCarriesOnlyTheFirstPiece() {
        let m = TusStateMachine(
            size: 10_000_000, creationURL: endpoint, filename: "a", capabilities: TusCapabilities(tuspy))
        guard case .create(_, let length, _) = m.plan() else {
            Issue.record("expected a creation")
            return
        }
        #expect(length == TusStateMachine.creationPiece)
    }

    @Test func withoutCreationWithUploadThePostIsEmpty() {
        var m = TusStateMachine(
            size: 1000, creationURL: endpoint, filename: "a", capabilities: TusCapabilities(extensions: ["creation"]))
        #expect(m.exchange(for: m.plan())?.body == BodyRange(offset: 0, length: 0))
        // A relative Location resolves against the creation URL.
        #expect(
            m.response(
                head(201, [("Location", "/files/abc"), ("Upload-Expires", "Fri, 27 Nov 2026 23:30:22 GMT")]),
                to: m.plan()) == .proceed)
        #expect(m.expires == "Fri, 27 Nov 2026 23:30:22 GMT")
        guard case .append(let url, let headers, let offset, let length, _) = m.plan() else {
            Issue.record("expected an append")
            return
        }
        #expect(url == resource && offset == 0 && length == 1000)
        #expect(headers["Upload-Offset"] == "0")
        #expect(headers["Content-Type"] == "application/offset+octet-stream")
        #expect(headers["Tus-Resumable"] == "1.0.0")
        #expect(m.response(head(204, [("Upload-Offset", "1000")]), to: m.plan()) == .completed)
    }

    @Test func chunkSizeCapsEachPatch() {
        var m = TusStateMachine(
            size: 1000, creationURL: endpoint, filename: "a", capabilities: TusCapabilities(extensions: ["creation"]),
            uploadURL: resource, chunkSize: 400)
        #expect(m.response(head(200, [("Upload-Offset", "0"), ("Upload-Length", "1000")]), to: m.plan()) == .proceed)
        var sent: [Int64] = []
        while case .append(_, _, let offset, let length, _) = m.plan() {
            sent.append(length)
            if m.response(head(204, [("Upload-Offset", String(offset + length))]), to: m.plan()) == .completed { break }
        }
        #expect(sent == [400, 400, 200])
    }

    /// A checksummed append is kept whole or not at all, so without --chunk-size it is bounded.
    @Test func checksummedAppendsAreBoundedWithoutAChunkSize() {
        let size = 2 * TusStateMachine.checksummedPiece + 5
        var m = TusStateMachine(
            size: size, creationURL: endpoint, filename: "a",
            capabilities: TusCapabilities(extensions: ["creation", "checksum"], checksumAlgorithms: ["sha256"]),
            uploadURL: resource)
        #expect(
            m.response(head(200, [("Upload-Offset", "0"), ("Upload-Length", String(size))]), to: m.plan()) == .proceed)
        var sent: [Int64] = []
        while case .append(_, _, let offset, let length, let checksum) = m.plan() {
            #expect(checksum == .sha256)
            sent.append(length)
            if m.response(head(204, [("Upload-Offset", String(offset + length))]), to: m.plan()) == .completed { break }
        }
        #expect(sent == [TusStateMachine.checksummedPiece, TusStateMachine.checksummedPiece, 5])
    }

    @Test func interruptedAppendAsksForTheOffsetFirst() {
        var m = TusStateMachine(size: 1000, creationURL: endpoint, filename: "a", uploadURL: resource)
        #expect(m.plan() == .queryOffset(url: resource, headers: ["Tus-Resumable": "1.0.0"]))
        #expect(m.response(head(200, [("Upload-Offset", "300")]), to: m.plan()) == .proceed)
        let append = m.plan()
        #expect(
            m.exchangeFailed("connection reset", during: append) == .retry(reason: "connection reset", retryAfter: nil))
        #expect(m.plan() == .queryOffset(url: resource, headers: ["Tus-Resumable": "1.0.0"]))
        #expect(m.response(head(200, [("Upload-Offset", "700")]), to: m.plan()) == .proceed)
        guard case .append(_, _, 700, 300, _) = m.plan() else {
            Issue.record("expected an append from 700")
            return
        }
    }

    @Test(arguments: [403, 404, 410])
    func goneOrExpiredUploadIsCreatedAnew(status: Int) {
        var m = TusStateMachine(
            size: 1000, creationURL: endpoint, filename: "a", capabilities: TusCapabilities(extensions: ["creation"]),
            uploadURL: resource, expires: "Sun, 22 Nov 2026 23:00:00 GMT")
        guard case .restarted = m.response(head(status), to: m.plan()) else {
            Issue.record("expected a restart")
            return
        }
        guard case .create = m.plan() else {
            Issue.record("expected a creation")
            return
        }
        var part = ResumeToken.UploadPart(
            uploadURL: resource, source: .init(path: "/a", size: 1000, mtime: 0, inode: 1, edgeHash: ""),
            acknowledgedBytes: 300, wire: .ietf(.v6))
        m.record(into: &part)
        #expect(part.uploadURL == nil && part.wire == .tus(expires: nil, checksum: nil))
    }

    @Test func conflictAsksForTheOffsetAgain() {
        var m = TusStateMachine(size: 1000, creationURL: endpoint, filename: "a", uploadURL: resource)
        _ = m.response(head(204, [("Upload-Offset", "0")]), to: m.plan())
        #expect(m.response(head(409), to: m.plan()) == .step(reason: "the server has another offset"))
        #expect(m.plan() == .queryOffset(url: resource, headers: ["Tus-Resumable": "1.0.0"]))
    }

    @Test func checksumUsesTheStrongestOfferedAndA460ResendsThePiece() {
        let offered = head(
            204,
            [
                ("Tus-Version", "1.0.0"), ("Tus-Extension", "creation,checksum"),
                ("Tus-Checksum-Algorithm", "md5,sha1,sha256"),
            ])
        var m = TusStateMachine(size: 1000, creationURL: endpoint, filename: "a")
        _ = m.response(offered, to: m.plan())
        #expect(m.checksum == .sha256)
        _ = m.response(head(201, [("Location", resource)]), to: m.plan())
        let append = m.plan()
        let exchange = m.exchange(for: append)
        #expect(exchange?.checksum == BodyChecksum(header: "Upload-Checksum", algorithm: .sha256, prefix: "sha256 "))
        guard case .resend = m.response(head(460), to: append) else {
            Issue.record("expected a resend")
            return
        }
        #expect(m.plan() == append)
    }

    @Test func checksumIsNotSentWithoutTheExtension() {
        let m = TusStateMachine(
            size: 10, creationURL: endpoint, filename: "a",
            capabilities: TusCapabilities(extensions: ["creation"], checksumAlgorithms: ["sha1"]), uploadURL: resource)
        #expect(m.checksum == nil)
    }

    @Test func maxSizeBelowTheFileFailsBeforeCreating() {
        var m = TusStateMachine(size: 2000, creationURL: endpoint, filename: "a")
        let small = head(204, [("Tus-Version", "1.0.0"), ("Tus-Max-Size", "1000")])
        guard case .fail(let reason) = m.response(small, to: m.plan()) else {
            Issue.record("expected a failure")
            return
        }
        #expect(reason.contains("Tus-Max-Size"))
        #expect(
            TusStateMachine.refusal(
                TusCapabilities(head(204, [("Tus-Resumable", "1.0.0"), ("Tus-Max-Size", "1000")]))!, size: 2000) != nil)
    }

    @Test func headSayingEverythingArrivedFinishes() {
        var m = TusStateMachine(size: 1000, creationURL: endpoint, filename: "a", uploadURL: resource)
        #expect(
            m.response(head(200, [("Upload-Offset", "1000"), ("Upload-Length", "1000")]), to: m.plan()) == .completed)
        #expect(m.plan() == .finished)
    }

    @Test func serverTroubleIsRetriedAndA412Fails() {
        var m = TusStateMachine(size: 1000, creationURL: endpoint, filename: "a", uploadURL: resource)
        guard case .retry = m.response(head(503), to: m.plan()) else {
            Issue.record("expected a retry")
            return
        }
        guard case .fail = m.response(head(412, [("Tus-Version", "0.2.2")]), to: m.plan()) else {
            Issue.record("expected a failure")
            return
        }
    }
}

@Suite struct ProtocolProbeTests {
    @Test func tusHeadersMeanTus() {
        guard case .tus(let caps) = ProtocolProbe.decide(tuspy) else {
            Issue.record("expected tus")
            return
        }
        #expect(caps.extensions.contains("creation-with-upload"))
        #expect(caps.maxSize == 128_849_018_880)
    }

    @Test func draftAnswersMeanIETF() {
        #expect(ProtocolProbe.decide(head(200, [("Upload-Limit", "min-size=0")])) == .ietf(nil))
        // NIOResumableUpload answers an interop version it does not speak with 400 naming its own.
        #expect(ProtocolProbe.decide(head(400, [(InteropVersion.header, "6")])) == .ietf(.v6))
    }

    @Test func anythingElseIsUnknown() {
        #expect(ProtocolProbe.decide(head(405, [("Allow", "GET, HEAD")])) == .unknown)
        #expect(ProtocolProbe.decide(head(200)) == .unknown)
        #expect(ProtocolProbe.decide(nil) == .unknown)
        #expect(ProtocolProbe.decide(head(400, [(InteropVersion.header, "99")])) == .unknown)
    }
}
